//! The configured upstreams, resolved once at start-up. Effect classes come from the
//! configuration only; an operation the configuration does not name has its upstream's default
//! effect: a `write`, except for an agent, whose every operation has the agent's effect.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use switchyard_contract::{EffectClass, Error, Ingress, Target, Upstream, UpstreamRegistry};

use crate::config::DemoUpstream;
use crate::demo::Demo;

struct Entry {
    upstream: Arc<dyn Upstream>,
    operations: HashMap<String, EffectClass>,
    /// The effect of an operation `operations` does not name.
    other: EffectClass,
    /// The face that serves this upstream, when one does (then only that face may call it).
    owner: Option<Ingress>,
}

/// Upstreams by name.
pub struct Registry {
    entries: HashMap<String, Entry>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.entries.keys()).finish()
    }
}

impl Registry {
    pub fn from_config<'a>(upstreams: impl Iterator<Item = &'a DemoUpstream>, data_dir: &Path) -> Self {
        let entries = upstreams
            .map(|u| {
                let log = u.call_log.clone().unwrap_or_else(|| data_dir.join("demo-calls.log"));
                let entry = Entry {
                    upstream: Arc::new(Demo::new(log)),
                    operations: u.operations.iter().map(|(k, v)| (k.clone(), *v)).collect(),
                    other: EffectClass::Write,
                    owner: None,
                };
                (u.name.clone(), entry)
            })
            .collect();
        Self { entries }
    }

    /// Adds an upstream that the face `owner` serves (MCP servers, A2A agents): only calls that
    /// come through that face reach it. `other`: the effect of an operation not listed.
    pub fn add(
        &mut self,
        name: String,
        owner: Ingress,
        upstream: Arc<dyn Upstream>,
        operations: impl IntoIterator<Item = (String, EffectClass)>,
        other: EffectClass,
    ) {
        let operations = operations.into_iter().collect();
        self.entries.insert(name, Entry { upstream, operations, other, owner: Some(owner) });
    }
}

impl UpstreamRegistry for Registry {
    fn target(&self, upstream: &str, operation: &str) -> Result<Target, Error> {
        let entry =
            self.entries.get(upstream).ok_or_else(|| Error::not_found(format!("no upstream named `{upstream}`")))?;
        if operation.is_empty() || operation.len() > 200 {
            return Err(Error::invalid_input("operation must be 1-200 characters"));
        }
        let effect = entry.operations.get(operation).copied().unwrap_or(entry.other);
        Ok(Target { upstream: upstream.to_string(), operation: operation.to_string(), effect })
    }

    fn upstream(&self, name: &str) -> Option<Arc<dyn Upstream>> {
        self.entries.get(name).map(|e| e.upstream.clone())
    }

    fn owner(&self, upstream: &str) -> Option<Ingress> {
        self.entries.get(upstream).and_then(|e| e.owner)
    }

    fn resolvers(&self) -> Vec<String> {
        self.entries.iter().filter(|(_, e)| e.upstream.resolver().is_some()).map(|(n, _)| n.clone()).collect()
    }
}
