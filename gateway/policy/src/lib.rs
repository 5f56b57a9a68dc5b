//! `switchyard-policy`: the decision core of the gateway's policy enforcement point. It knows no
//! protocol: its one input is a [`DecisionRequest`] shaped like the OpenID AuthZEN model
//! (subject, action, resource, context), and its one output an [`Outcome`] whose [`Verdict`]
//! is exactly one of allow, deny, hold (for a human's approval) or defer.
//!
//! Operators write a [`PolicyConfig`] (TOML `[policy]`): an envelope of hard denies, rules that
//! deny or assign a [`Tier`] (`routine`, `sensitive`, `critical`) per upstream and operation
//! pattern, optionally under argument conditions, and what each tier does by default.
//! Precedence, in order: envelope > explicit deny > grant > tier default. A condition that cannot
//! be evaluated fails closed (deny). [`Evaluator`] implements the contract's [`PolicyPoint`], the
//! port the engine asks before it admits a call.
//!
//! [`PolicyPoint`]: switchyard_contract::PolicyPoint

pub mod audit;
pub mod authzen;
mod cache;
pub mod cedar;
pub mod concurrency;
mod config;
mod error;
mod evaluate;
pub mod grants;
mod pattern;
pub mod quota;
mod request;

pub use config::{Condition, PolicyConfig, Rule, TierAction, TierActions};
pub use error::{PolicyError, Unevaluable};
pub use evaluate::{Evaluator, Outcome};
pub use request::{Action, Context, DecisionRequest, Resource, Subject, Tier, ToolHints, Untrusted};
pub use switchyard_contract::Verdict;

#[cfg(test)]
mod tests;
