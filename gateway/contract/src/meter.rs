//! What the engine tells an operator's metrics: the [`Meter`] port. The binary implements it
//! with Prometheus (`GET /metrics`); without one nothing is counted. Every method is called on
//! the hot path and must not block.

use std::time::Duration;

use crate::ports::Ingress;
use crate::principal::Target;
use crate::state::Invocation;

pub trait Meter: Send + Sync + std::fmt::Debug {
    /// The policy enforcement point ruled on a call: `verdict` is `allow`, `deny`, `hold` or
    /// `defer`.
    fn decided(&self, ingress: Ingress, verdict: &'static str);
    /// A call was admitted (created, not attached to an earlier one).
    fn admitted(&self, ingress: Ingress, target: &Target);
    /// One attempt at `target` took `elapsed` (sending it, to its answer or its end), and left
    /// its invocation in `state` (`succeeded`, `failed`, `retrying`, `unknown`, `canceled`).
    fn attempted(&self, target: &Target, elapsed: Duration, state: &'static str);
    /// A call entered a settled state (terminal, or `unknown`): `inv` as it is now.
    fn settled(&self, inv: &Invocation);
    /// Recovery took over `n` invocations whose lease had expired.
    fn taken_over(&self, n: usize);
    /// One commit of `what` (`admission`, `transition`) took `elapsed`, queueing for a shared
    /// commit included.
    fn committed(&self, what: &'static str, elapsed: Duration);
}
