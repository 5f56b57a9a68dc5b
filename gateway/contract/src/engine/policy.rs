//! Retry policy and the classification of an upstream's answer into an attempt outcome.

use std::time::Duration;

use serde_json::Value;

use crate::Millis;
use crate::error::{ErrorSource, FailureCode, FailureRecord};
use crate::ports::UpstreamError;
use crate::principal::EffectClass;
use crate::state::{AttemptOutcome, exhausted};

/// Bounded exponential backoff with jitter, for `read_only` targets only (G5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    pub backoff_base: Duration,
    pub backoff_max: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self { max_attempts: 3, backoff_base: Duration::from_millis(100), backoff_max: Duration::from_secs(5) }
    }
}

impl RetryPolicy {
    /// The pause after attempt `attempt_no` failed: base·2^(n-1), capped, minus up to 25 % jitter.
    pub fn backoff(&self, attempt_no: u32) -> Duration {
        let exp = self.backoff_base.saturating_mul(1u32 << attempt_no.saturating_sub(1).min(20));
        let capped = exp.min(self.backoff_max);
        let jitter_range = u64::try_from(capped.as_millis() / 4).unwrap_or(0);
        let jitter = if jitter_range == 0 { 0 } else { (uuid::Uuid::new_v4().as_u128() as u64) % jitter_range };
        capped.saturating_sub(Duration::from_millis(jitter))
    }

    /// What an attempt's result means for the invocation.
    pub fn classify(
        &self,
        result: Result<Value, UpstreamError>,
        effect: EffectClass,
        attempt_no: u32,
        backoff: Duration,
        now: Millis,
    ) -> AttemptOutcome {
        let retry_or_fail = |error: FailureRecord| {
            if effect == EffectClass::ReadOnly && attempt_no < self.max_attempts {
                let wait = i64::try_from(backoff.as_millis()).unwrap_or(i64::MAX);
                AttemptOutcome::Retry { error, retry_at_ms: now.saturating_add(wait) }
            } else if effect == EffectClass::ReadOnly {
                AttemptOutcome::Failed(exhausted(attempt_no, &error))
            } else {
                AttemptOutcome::Failed(error)
            }
        };
        match result {
            Ok(v) => AttemptOutcome::Succeeded(v),
            Err(UpstreamError::Rejected { code, message, details }) => AttemptOutcome::Failed(FailureRecord {
                details,
                ..FailureRecord::new(code, message, true, ErrorSource::Upstream)
            }),
            Err(UpstreamError::Unavailable { message }) => retry_or_fail(FailureRecord::new(
                FailureCode::UpstreamUnavailable,
                message,
                true,
                ErrorSource::Upstream,
            )),
            Err(UpstreamError::Lost { message }) if effect == EffectClass::Write => {
                AttemptOutcome::Unknown { reason: message }
            }
            Err(UpstreamError::Lost { message }) => {
                retry_or_fail(FailureRecord::new(FailureCode::OutcomeLost, message, true, ErrorSource::Upstream))
            }
            Err(UpstreamError::Canceled) => AttemptOutcome::Canceled,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 3,
            backoff_base: Duration::from_millis(100),
            backoff_max: Duration::from_millis(300),
        }
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        let b1 = p().backoff(1);
        let b3 = p().backoff(3);
        assert!(b1 <= Duration::from_millis(100) && b1 >= Duration::from_millis(75), "{b1:?}");
        assert!(b3 <= Duration::from_millis(300) && b3 >= Duration::from_millis(225), "{b3:?}");
        assert!(p().backoff(40) <= Duration::from_millis(300));
    }

    #[test]
    fn lost_write_is_unknown_lost_read_is_retried_then_exhausted() {
        let lost = || Err(UpstreamError::Lost { message: "timeout".into() });
        let d = Duration::from_millis(50);
        assert!(matches!(p().classify(lost(), EffectClass::Write, 1, d, 0), AttemptOutcome::Unknown { .. }));
        assert!(matches!(
            p().classify(lost(), EffectClass::ReadOnly, 1, d, 1000),
            AttemptOutcome::Retry { retry_at_ms: 1050, .. }
        ));
        match p().classify(lost(), EffectClass::ReadOnly, 3, d, 0) {
            AttemptOutcome::Failed(f) => assert_eq!(f.code, FailureCode::AttemptsExhausted),
            other => panic!("expected failure, got {other:?}"),
        }
    }

    #[test]
    fn unavailable_write_fails_without_retry() {
        let r = Err(UpstreamError::Unavailable { message: "refused".into() });
        match p().classify(r, EffectClass::Write, 1, Duration::ZERO, 0) {
            AttemptOutcome::Failed(f) => assert!(f.retry_safe && f.code == FailureCode::UpstreamUnavailable),
            other => panic!("expected failure, got {other:?}"),
        }
    }
}
