//! The engine as the upstreams built before it see it (an A2A `tools` agent submits its tool
//! calls to the engine that calls it): a handle that holds the engine weakly, so the two do not
//! keep each other alive. It is there from construction ([`super::EngineBuilder::build_cyclic`]);
//! a call through it after the engine was dropped is refused as unavailable.

use std::sync::Weak;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt as _;
use futures::stream::BoxStream;

use super::{Engine, Inner};
use crate::Millis;
use crate::error::Error;
use crate::event::Event;
use crate::id::InvocationId;
use crate::ports::{ClientGone, Invocations, ListQuery, Page, Passage, Submission, Submitted, Waited};
use crate::principal::{IngressKey, Principal, TenantId};
use crate::state::{Decision, Invocation};

pub(super) struct WeakEngine(pub(super) Weak<Inner>);

impl std::fmt::Debug for WeakEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WeakEngine")
    }
}

impl WeakEngine {
    fn engine(&self) -> Result<Engine, Error> {
        self.0.upgrade().map(|inner| Engine { inner }).ok_or_else(|| Error::unavailable("the engine has stopped"))
    }
}

#[async_trait]
impl Invocations for WeakEngine {
    async fn submit(&self, s: Submission) -> Result<Submitted, Error> {
        self.engine()?.submit(s).await
    }

    async fn submit_and_wait(&self, s: Submission, limit: Duration, gone: ClientGone) -> Result<Waited, Error> {
        self.engine()?.submit_and_wait(s, limit, gone).await
    }

    async fn wait(&self, tenant: &TenantId, id: InvocationId, limit: Duration) -> Result<Invocation, Error> {
        self.engine()?.wait(tenant, id, limit).await
    }

    async fn get(&self, tenant: &TenantId, id: InvocationId) -> Result<Invocation, Error> {
        self.engine()?.get(tenant, id).await
    }

    async fn by_key(&self, tenant: &TenantId, key: &IngressKey) -> Result<Option<Invocation>, Error> {
        self.engine()?.by_key(tenant, key).await
    }

    async fn now(&self) -> Result<Millis, Error> {
        self.engine()?.now().await
    }

    async fn list(&self, tenant: &TenantId, query: ListQuery) -> Result<Page, Error> {
        self.engine()?.list(tenant, query).await
    }

    async fn cancel(&self, by: &Principal, id: InvocationId) -> Result<Invocation, Error> {
        self.engine()?.cancel(by, id).await
    }

    async fn reconcile(&self, by: &Principal, id: InvocationId, decision: Decision) -> Result<Invocation, Error> {
        self.engine()?.reconcile(by, id, decision).await
    }

    async fn approve(&self, by: &Principal, id: InvocationId) -> Result<Invocation, Error> {
        self.engine()?.approve(by, id).await
    }

    async fn deny(&self, by: &Principal, id: InvocationId, reason: String) -> Result<Invocation, Error> {
        self.engine()?.deny(by, id, reason).await
    }

    async fn events(&self, tenant: &TenantId, id: InvocationId, after: u64, limit: u32) -> Result<Vec<Event>, Error> {
        self.engine()?.events(tenant, id, after, limit).await
    }

    fn watch(&self, tenant: TenantId, id: InvocationId, after: u64) -> BoxStream<'static, Result<Event, Error>> {
        match self.engine() {
            Ok(engine) => engine.watch(tenant, id, after),
            Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
        }
    }

    async fn decide_passage(&self, passage: &Passage) -> Result<(), Error> {
        self.engine()?.decide_passage(passage).await
    }
}
