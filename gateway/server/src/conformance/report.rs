//! What a run found: outcomes per leg, the verdict (scored failures, baseline, differences
//! between legs) and the text table printed at the end.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    /// Passed with warnings.
    Warn,
    Fail,
    /// Not tested (not applicable, or the target does not declare the capability).
    Skip,
}

impl Status {
    pub fn word(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Warn => "warn",
            Status::Fail => "FAIL",
            Status::Skip => "skip",
        }
    }

    fn passes(self) -> bool {
        matches!(self, Status::Pass | Status::Warn)
    }
}

/// One scenario (MCP) or requirement (A2A TCK) in one leg.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// The requirement set or group it ran in: `2026-07-28`, `named`, `tck`.
    pub set: String,
    pub name: String,
    /// Counts towards the verdict without a baseline (MCP: required by the set; A2A: at the
    /// scored level).
    pub scored: bool,
    /// A2A: MUST, SHOULD or MAY.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
    pub status: Status,
    pub passed: u32,
    pub failed: u32,
    pub warnings: u32,
    /// What failed: check id and message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
}

impl Outcome {
    /// `pass 4`, `FAIL 1/4`, `warn 2`, `skip`.
    pub fn cell(&self) -> String {
        match self.status {
            Status::Pass if self.passed > 0 => format!("pass {}", self.passed),
            Status::Fail if self.passed + self.failed > 0 => {
                format!("FAIL {}/{}", self.failed, self.passed + self.failed)
            }
            Status::Warn => format!("warn {}", self.warnings),
            s => s.word().to_string(),
        }
    }
}

/// The suite run once against one target: directly, or through the gateway.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Leg {
    /// `direct` or `through gateway`.
    pub label: String,
    /// What the suite talked to.
    pub target: String,
    pub outcomes: Vec<Outcome>,
}

impl Leg {
    /// `49 scenarios: 47 passed, 2 failed (0 scored), 1 with warnings, 0 skipped`.
    pub fn totals(&self, unit: &str) -> String {
        let count = |s: Status| self.outcomes.iter().filter(|o| o.status == s).count();
        let scored = self.outcomes.iter().filter(|o| o.status == Status::Fail && o.scored).count();
        format!(
            "{} {unit}: {} passed, {} failed ({scored} scored), {} with warnings, {} skipped",
            self.outcomes.len(),
            count(Status::Pass) + count(Status::Warn),
            count(Status::Fail),
            count(Status::Warn),
            count(Status::Skip)
        )
    }
}

/// Accepted failures: one scenario or requirement name per line, `#` starts a comment. A plain
/// entry is for the last leg (through the gateway, when comparing); `<leg>:<name>` (e.g.
/// `direct:GRPC-ERR-002`) for the leg of that label. In a leg the baseline covers, a listed
/// failure does not fail the run, a listed entry that passes does (the list only shrinks), and
/// an unscored failure that is not listed fails it too.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Baseline {
    pub path: String,
    pub entries: BTreeSet<String>,
}

impl Baseline {
    pub fn parse(path: &str, text: &str) -> Self {
        let entries = text
            .lines()
            .map(|l| l.split('#').next().unwrap_or_default().trim())
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect();
        Self { path: path.to_string(), entries }
    }

    /// The entries for leg `label`, when the baseline covers it (`last`: the last leg).
    fn for_leg(&self, label: &str, last: bool) -> Option<BTreeSet<&str>> {
        let prefix = format!("{label}:");
        let mut covered = last;
        let mut names = BTreeSet::new();
        for e in &self.entries {
            if let Some(name) = e.strip_prefix(&prefix) {
                covered = true;
                names.insert(name);
            } else if last && !e.contains(':') {
                names.insert(e.as_str());
            }
        }
        covered.then_some(names)
    }
}

/// A finished run, as written to `summary.json` and kept in the store.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub id: String,
    /// `mcp-server`, `mcp-client` or `a2a`.
    pub suite: String,
    /// The kit and its pinned version, e.g. `@modelcontextprotocol/conformance@0.2.0-alpha.12`.
    pub kit: String,
    pub target: String,
    pub started_ms: i64,
    pub finished_ms: i64,
    pub legs: Vec<Leg>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Baseline>,
    /// Why the run failed; empty when it passed.
    pub problems: Vec<String>,
    /// Differences that do not fail the run.
    #[serde(default)]
    pub notes: Vec<String>,
    pub passed: bool,
}

impl Report {
    /// `scenarios` (MCP) or `requirements` (A2A).
    pub fn unit(&self) -> &'static str {
        if self.suite == "a2a" { "requirements" } else { "scenarios" }
    }

    /// Sets the verdict: a scored failure in any leg (unless the baseline accepts it); in a leg
    /// the baseline covers, any failure it does not list and any listed entry that passes; and,
    /// between two legs, anything that passes directly but fails through the gateway. What
    /// passes only through the gateway (the gateway adds the Tasks extension, or mends an
    /// agent's error codes) is noted, not a problem.
    pub fn judge(&mut self) {
        let mut problems = Vec::new();
        let judged = self.legs.len().saturating_sub(1);
        for (i, leg) in self.legs.iter().enumerate() {
            let entries = self.baseline.as_ref().and_then(|b| b.for_leg(&leg.label, i == judged));
            let baseline = self.baseline.as_ref().filter(|_| entries.is_some());
            for o in &leg.outcomes {
                let listed = entries.as_ref().is_some_and(|e| e.contains(o.name.as_str()));
                let first = o.failures.first().map(|f| format!(": {f}")).unwrap_or_default();
                match (o.status, listed) {
                    (Status::Fail, false) if o.scored => {
                        problems.push(format!("{}: {} {} fails{first}", leg.label, o.set, o.name));
                    }
                    (Status::Fail, false) if baseline.is_some() => problems.push(format!(
                        "{}: {} {} fails (unscored, not in the baseline){first}",
                        leg.label, o.set, o.name
                    )),
                    (s, true) if s.passes() => problems.push(format!(
                        "{}: {} {} passes but the baseline {} lists it: remove it",
                        leg.label,
                        o.set,
                        o.name,
                        baseline.map_or("", |b| b.path.as_str())
                    )),
                    _ => {}
                }
            }
        }
        let mut notes = Vec::new();
        for row in self.differences() {
            let worse = row.outcomes.first().copied().flatten().is_some_and(|o| o.status.passes());
            let line = format!("{} {}: {}", row.set, row.name, row.cells.join(" vs "));
            if worse {
                problems.push(format!("worse through the gateway: {line}"));
            } else {
                notes.push(format!("passes only through the gateway: {line}"));
            }
        }
        self.passed = problems.is_empty();
        self.problems = problems;
        self.notes = notes;
    }

    /// Every (set, name) in the order first seen, with each leg's outcome.
    pub fn rows(&self) -> Vec<Row<'_>> {
        let mut order: Vec<(&str, &str)> = Vec::new();
        let mut by_key: BTreeMap<(&str, &str), Vec<Option<&Outcome>>> = BTreeMap::new();
        for (i, leg) in self.legs.iter().enumerate() {
            for o in &leg.outcomes {
                let key = (o.set.as_str(), o.name.as_str());
                let cells = by_key.entry(key).or_insert_with(|| {
                    order.push(key);
                    vec![None; self.legs.len()]
                });
                if let Some(cell) = cells.get_mut(i) {
                    *cell = Some(o);
                }
            }
        }
        order
            .into_iter()
            .map(|(set, name)| {
                let outcomes = by_key.remove(&(set, name)).unwrap_or_default();
                let cells = outcomes.iter().map(|o| o.map_or_else(|| "-".to_string(), Outcome::cell)).collect();
                let scored = outcomes.iter().flatten().any(|o| o.scored);
                let level = outcomes.iter().flatten().find_map(|o| o.level.clone());
                Row { set, name, scored, level, outcomes, cells }
            })
            .collect()
    }

    /// Rows where one leg fails and another passes (a skip or a missing row is no difference:
    /// through the gateway a card may declare more than the agent's).
    pub fn differences(&self) -> Vec<Row<'_>> {
        if self.legs.len() < 2 {
            return Vec::new();
        }
        self.rows()
            .into_iter()
            .filter(|r| {
                let fails = r.outcomes.iter().flatten().any(|o| o.status == Status::Fail);
                let passes = r.outcomes.iter().flatten().any(|o| o.status.passes());
                fails && passes
            })
            .collect()
    }

    /// The table printed at the end of a run (and by `conformance show`): every row when there
    /// are few, else the rows that do not pass everywhere.
    pub fn table(&self) -> String {
        let rows = self.rows();
        let all = rows.len() <= 150;
        let width = rows.iter().map(|r| r.name.len()).max().unwrap_or(8).max(8);
        let mut out = String::new();
        out.push_str(&format!("{:<12} {:<width$} {:<7}", "set", self.unit_singular(), "scored"));
        for leg in &self.legs {
            out.push_str(&format!(" {:<16}", leg.label));
        }
        out.push('\n');
        let mut hidden = 0;
        for r in &rows {
            let clean = r.outcomes.iter().all(|o| o.is_none_or(|o| o.status.passes()));
            if !all && clean {
                hidden += 1;
                continue;
            }
            let scored = match (&r.level, r.scored) {
                (Some(level), _) => level.clone(),
                (None, true) => "yes".to_string(),
                (None, false) => "no".to_string(),
            };
            out.push_str(&format!("{:<12} {:<width$} {:<7}", r.set, r.name, scored));
            for cell in &r.cells {
                out.push_str(&format!(" {cell:<16}"));
            }
            out.push('\n');
        }
        if hidden > 0 {
            out.push_str(&format!("({hidden} more {} pass in every leg: see the HTML report)\n", self.unit()));
        }
        for leg in &self.legs {
            out.push_str(&format!("{}: {}\n", leg.label, leg.totals(self.unit())));
        }
        out
    }

    fn unit_singular(&self) -> &'static str {
        if self.suite == "a2a" { "requirement" } else { "scenario" }
    }
}

/// One line of the table.
#[derive(Debug)]
pub struct Row<'a> {
    pub set: &'a str,
    pub name: &'a str,
    pub scored: bool,
    pub level: Option<String>,
    /// Per leg, in the report's order.
    pub outcomes: Vec<Option<&'a Outcome>>,
    pub cells: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(name: &str, scored: bool, status: Status) -> Outcome {
        let failed = u32::from(status == Status::Fail);
        let failures = if failed > 0 { vec![format!("{name}-check: wrong")] } else { Vec::new() };
        Outcome {
            set: "2026-07-28".into(),
            name: name.into(),
            scored,
            level: None,
            status,
            passed: 2,
            failed,
            warnings: 0,
            failures,
        }
    }

    fn report(legs: Vec<Vec<Outcome>>, baseline: Option<&str>) -> Report {
        let labels = ["direct", "through gateway"];
        let mut r = Report {
            id: "run_x".into(),
            suite: "mcp-server".into(),
            kit: "kit".into(),
            target: "http://t".into(),
            started_ms: 0,
            finished_ms: 0,
            legs: legs
                .into_iter()
                .zip(labels)
                .map(|(outcomes, label)| Leg { label: label.into(), target: "u".into(), outcomes })
                .collect(),
            baseline: baseline.map(|text| Baseline::parse("base.txt", text)),
            problems: Vec::new(),
            notes: Vec::new(),
            passed: false,
        };
        r.judge();
        r
    }

    #[test]
    fn scored_failures_fail_a_run_and_unscored_ones_do_not() {
        let ok = report(vec![vec![outcome("a", true, Status::Pass), outcome("t", false, Status::Fail)]], None);
        assert!(ok.passed, "{:?}", ok.problems);
        let bad = report(vec![vec![outcome("a", true, Status::Fail)]], None);
        assert!(!bad.passed);
        assert_eq!(bad.problems, ["direct: 2026-07-28 a fails: a-check: wrong"]);
    }

    #[test]
    fn a_baseline_accepts_what_it_lists_and_fails_on_new_and_stale_entries() {
        let legs = vec![vec![
            outcome("a", true, Status::Fail),
            outcome("t", false, Status::Fail),
            outcome("u", false, Status::Fail),
            outcome("p", true, Status::Pass),
        ]];
        let r = report(legs, Some("# accepted\na\nt   # a comment\np\n"));
        assert!(!r.passed);
        assert_eq!(
            r.problems,
            [
                "direct: 2026-07-28 u fails (unscored, not in the baseline): u-check: wrong",
                "direct: 2026-07-28 p passes but the baseline base.txt lists it: remove it",
            ]
        );
    }

    #[test]
    fn legs_that_disagree_differ_but_a_skip_is_no_difference() {
        let direct = vec![
            outcome("a", false, Status::Pass),
            outcome("b", false, Status::Pass),
            outcome("c", false, Status::Fail),
            outcome("d", true, Status::Fail),
        ];
        let gateway = vec![
            outcome("a", false, Status::Fail),
            outcome("b", false, Status::Skip),
            outcome("c", false, Status::Pass),
            outcome("d", true, Status::Pass),
        ];
        let r = report(vec![direct, gateway], None);
        assert_eq!(
            r.problems,
            [
                "direct: 2026-07-28 d fails: d-check: wrong",
                "worse through the gateway: 2026-07-28 a: pass 2 vs FAIL 1/3",
            ]
        );
        assert_eq!(
            r.notes,
            [
                "passes only through the gateway: 2026-07-28 c: FAIL 1/3 vs pass 2",
                "passes only through the gateway: 2026-07-28 d: FAIL 1/3 vs pass 2",
            ]
        );
        let table = r.table();
        assert!(table.contains("through gateway"), "{table}");
        assert!(table.contains("FAIL 1/3"), "{table}");
        assert!(table.contains("direct: 4 scenarios: 2 passed, 2 failed (1 scored)"), "{table}");
    }

    #[test]
    fn when_comparing_the_baseline_judges_the_leg_through_the_gateway() {
        let direct = vec![outcome("t", false, Status::Fail), outcome("u", false, Status::Fail)];
        let gateway = vec![outcome("t", false, Status::Fail), outcome("u", false, Status::Pass)];
        let r = report(vec![direct.clone(), gateway.clone()], Some("t\n"));
        assert!(r.passed, "{:?}", r.problems);
        assert_eq!(r.notes.len(), 1, "u passes only through the gateway");
        // Entries for the direct leg are named so, and judge it as strictly.
        let r = report(vec![direct.clone(), gateway.clone()], Some("t\ndirect:t\ndirect:u\n"));
        assert!(r.passed, "{:?}", r.problems);
        let r = report(vec![direct, gateway], Some("t\ndirect:u\ndirect:gone\n"));
        assert_eq!(r.problems, ["direct: 2026-07-28 t fails (unscored, not in the baseline): t-check: wrong"]);
    }
}
