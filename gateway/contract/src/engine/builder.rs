//! [`EngineBuilder`]: everything an engine depends on is given before it exists, so no part of
//! it is missing (or set late) while it runs.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::weak::WeakEngine;
use super::{Engine, EngineConfig, FaultHook, Inner, NoFaults};
use crate::audit::AuditLog;
use crate::error::Error;
use crate::policy::{AllowAll, PolicyPoint};
use crate::ports::{ChangeFeed, InvocationStore, Invocations, UpstreamRegistry};

/// Builds an [`Engine`]: [`Engine::builder`], the optional parts, then [`EngineBuilder::build`].
#[must_use]
pub struct EngineBuilder {
    store: Arc<dyn InvocationStore>,
    cfg: EngineConfig,
    faults: Arc<dyn FaultHook>,
    policy: Arc<dyn PolicyPoint>,
    feed: Option<Arc<dyn ChangeFeed>>,
    audit: Option<Arc<dyn AuditLog>>,
    meter: Option<Arc<dyn crate::Meter>>,
}

impl std::fmt::Debug for EngineBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineBuilder").field("worker", &self.cfg.worker).finish_non_exhaustive()
    }
}

impl Engine {
    /// An engine over `store`; without more, every call is allowed, nothing is audited or
    /// metered, and no other replica is heard.
    pub fn builder(store: Arc<dyn InvocationStore>, cfg: EngineConfig) -> EngineBuilder {
        EngineBuilder {
            store,
            cfg,
            faults: Arc::new(NoFaults),
            policy: Arc::new(AllowAll),
            feed: None,
            audit: None,
            meter: None,
        }
    }
}

impl EngineBuilder {
    /// Where the crash and fault tests stop the engine.
    pub fn faults(mut self, faults: Arc<dyn FaultHook>) -> Self {
        self.faults = faults;
        self
    }

    /// Asked before every admission.
    pub fn policy(mut self, policy: Arc<dyn PolicyPoint>) -> Self {
        self.policy = policy;
        self
    }

    /// Other replicas' changes heard on `feed`, and this one's announced there: watchers are
    /// woken by them at once, and poll only as a fallback.
    pub fn feed(mut self, feed: Option<Arc<dyn ChangeFeed>>) -> Self {
        self.feed = feed;
        self
    }

    /// Where every policy decision, approval, denial, expiry and reconciliation is recorded.
    pub fn audit(mut self, log: Option<Arc<dyn AuditLog>>) -> Self {
        self.audit = log;
        self
    }

    /// Where the engine's counts and timings go (`GET /metrics`).
    pub fn meter(mut self, meter: Arc<dyn crate::Meter>) -> Self {
        self.meter = Some(meter);
        self
    }

    /// The engine, calling `upstreams`. With a feed, it starts listening at once (so within a
    /// Tokio runtime).
    pub fn build(self, upstreams: Arc<dyn UpstreamRegistry>) -> Result<Engine, Error> {
        self.build_cyclic(|_| Ok::<_, Error>(upstreams))
    }

    /// The engine, calling the upstreams `upstreams` makes from the engine's own driving port:
    /// for upstreams that submit calls to the engine that calls them (an A2A `tools` agent).
    /// The port holds the engine weakly; it is refused as unavailable once the engine is gone.
    pub fn build_cyclic<E: From<Error>>(
        self,
        upstreams: impl FnOnce(Arc<dyn Invocations>) -> Result<Arc<dyn UpstreamRegistry>, E>,
    ) -> Result<Engine, E> {
        self.cfg.validate().map_err(|e| Error::invalid_input(e.0))?;
        let mut made = None;
        let inner = Arc::new_cyclic(|weak| {
            let registry = upstreams(Arc::new(WeakEngine(weak.clone())));
            let (registry, failed) = match registry {
                Ok(r) => (r, None),
                Err(e) => (Arc::new(NoUpstreams) as Arc<dyn UpstreamRegistry>, Some(e)),
            };
            made = failed;
            Inner {
                store: self.store,
                upstreams: registry,
                faults: self.faults,
                policy: self.policy,
                cfg: self.cfg,
                hub: Arc::default(),
                sweeping: std::sync::atomic::AtomicBool::new(false),
                feed: self.feed,
                audit: self.audit,
                meter: self.meter,
                running: Mutex::new(HashMap::new()),
                stopping: tokio::sync::watch::channel(false).0,
                drained: tokio::sync::watch::channel(false).0,
            }
        });
        if let Some(e) = made {
            return Err(e);
        }
        let engine = Engine { inner };
        if let Some(feed) = engine.inner.feed.clone() {
            engine.listen(feed);
        }
        Ok(engine)
    }
}

/// The upstreams of an engine whose build failed: it is dropped at once, never run.
struct NoUpstreams;

impl UpstreamRegistry for NoUpstreams {
    fn target(&self, upstream: &str, _: &str) -> Result<crate::principal::Target, Error> {
        Err(Error::not_found(format!("no upstream {upstream}")))
    }

    fn upstream(&self, _: &str) -> Option<Arc<dyn crate::ports::Upstream>> {
        None
    }
}
