//! Glob patterns for upstream, operation, subject and tenant names.

use crate::request::DecisionRequest;

/// The pattern that matches every name (the default of every pattern field).
pub(crate) fn any() -> String {
    "*".into()
}

/// Whether the `upstream` and `operation` patterns name the call's resource.
pub(crate) fn names_resource(upstream: &str, operation: &str, req: &DecisionRequest) -> bool {
    glob(upstream, &req.resource.upstream) && glob(operation, &req.resource.operation)
}

/// Whether `text` matches `pattern`, where `*` stands for any run of characters (none
/// included) and every other character for itself.
/// Whether a decision point configured for `tenants` (empty: every tenant) decides `tenant`'s calls.
pub(crate) fn names_tenant(tenants: &[String], tenant: &str) -> bool {
    tenants.is_empty() || tenants.iter().any(|t| t == tenant)
}

pub(crate) fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti) = (0, 0);
    // Where the last `*` was, and how much of the text it has taken so far.
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}
