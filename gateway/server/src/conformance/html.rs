//! The self-contained HTML report (`report.html`): the same tables as the terminal, colour-coded,
//! the differences between legs, and every failure's messages. No scripts, no external files.

use std::fmt::Write as _;

use super::report::{Report, Status};
use crate::console::esc;

fn class(status: Option<Status>) -> &'static str {
    match status {
        Some(Status::Pass) => "pass",
        Some(Status::Warn) => "warn",
        Some(Status::Fail) => "fail",
        Some(Status::Skip) | None => "skip",
    }
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2rem;color:#1b1f24}\
h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:2rem}table{border-collapse:collapse;font-size:.9rem}\
th,td{border:1px solid #d0d7de;padding:.25rem .6rem;text-align:left}th{background:#f6f8fa}\
td.pass{background:#dafbe1}td.warn{background:#fff8c5}td.fail{background:#ffebe9;font-weight:600}\
td.skip{color:#57606a}.verdict{font-size:1.2rem;font-weight:700}.ok{color:#1a7f37}.bad{color:#cf222e}\
code{font-size:.85rem}li{margin:.2rem 0}";

/// The report as one HTML page.
pub fn render(report: &Report) -> String {
    let mut h = String::new();
    let verdict = if report.passed { ("ok", "PASSED") } else { ("bad", "FAILED") };
    let _ = write!(
        h,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{suite} conformance: {verdict}</title>\
         <style>{STYLE}</style></head><body><h1>{suite} conformance — {target}</h1>\
         <p class=\"verdict {vclass}\" id=\"verdict\">{verdict}</p>\
         <p>Run <code>{id}</code> · kit <code>{kit}</code> · {secs:.1} s</p>",
        suite = esc(&report.suite),
        target = esc(&report.target),
        vclass = verdict.0,
        verdict = verdict.1,
        id = esc(&report.id),
        kit = esc(&report.kit),
        secs = (report.finished_ms - report.started_ms) as f64 / 1000.0,
    );
    h.push_str("<h2>Legs</h2><ul>");
    for leg in &report.legs {
        let _ = write!(
            h,
            "<li><b>{}</b> against <code>{}</code>: {}</li>",
            esc(&leg.label),
            esc(&leg.target),
            esc(&leg.totals(report.unit()))
        );
    }
    h.push_str("</ul>");
    if let Some(b) = &report.baseline {
        let _ = write!(h, "<p>Baseline <code>{}</code>: {} accepted failures.</p>", esc(&b.path), b.entries.len());
    }
    if !report.problems.is_empty() {
        h.push_str("<h2>Problems</h2><ul id=\"problems\">");
        for p in &report.problems {
            let _ = write!(h, "<li>{}</li>", esc(p));
        }
        h.push_str("</ul>");
    }
    if !report.notes.is_empty() {
        h.push_str("<h2>Notes</h2><ul id=\"notes\">");
        for n in &report.notes {
            let _ = write!(h, "<li>{}</li>", esc(n));
        }
        h.push_str("</ul>");
    }
    let differences = report.differences();
    if report.legs.len() > 1 {
        let _ = write!(h, "<h2>Differences between the legs ({})</h2>", differences.len());
        if differences.is_empty() {
            h.push_str("<p>None: every scenario that passes in one leg passes in the other.</p>");
        } else {
            table(&mut h, report, &differences, "differences");
        }
    }
    let _ = write!(h, "<h2>Results ({})</h2>", report.unit());
    table(&mut h, report, &report.rows(), "results");
    let failing: Vec<_> = report
        .legs
        .iter()
        .flat_map(|l| l.outcomes.iter().map(move |o| (l, o)))
        .filter(|(_, o)| o.status == Status::Fail)
        .collect();
    if !failing.is_empty() {
        h.push_str("<h2>Failures</h2>");
        for (leg, o) in failing {
            let _ = write!(h, "<h3>{} · {} · {}</h3><ul>", esc(&leg.label), esc(&o.set), esc(&o.name));
            for f in &o.failures {
                let _ = write!(h, "<li><code>{}</code></li>", esc(f));
            }
            h.push_str("</ul>");
        }
    }
    h.push_str("</body></html>\n");
    h
}

fn table(h: &mut String, report: &Report, rows: &[super::report::Row<'_>], id: &str) {
    let _ = write!(h, "<table id=\"{id}\"><thead><tr><th>set</th><th>name</th><th>scored</th>");
    for leg in &report.legs {
        let _ = write!(h, "<th>{}</th>", esc(&leg.label));
    }
    h.push_str("</tr></thead><tbody>");
    for r in rows {
        let scored = r.level.clone().unwrap_or_else(|| if r.scored { "yes".into() } else { "no".into() });
        let _ = write!(h, "<tr><td>{}</td><td>{}</td><td>{}</td>", esc(r.set), esc(r.name), esc(&scored));
        for (o, cell) in r.outcomes.iter().zip(&r.cells) {
            let _ = write!(h, "<td class=\"{}\">{}</td>", class(o.map(|o| o.status)), esc(cell));
        }
        h.push_str("</tr>");
    }
    h.push_str("</tbody></table>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance::report::{Leg, Outcome};

    #[test]
    fn the_page_escapes_what_targets_send_and_marks_failures() {
        let o = Outcome {
            set: "2026-07-28".into(),
            name: "tools-call-simple-text".into(),
            scored: true,
            level: None,
            status: Status::Fail,
            passed: 1,
            failed: 1,
            warnings: 0,
            failures: vec!["check: got <script>alert(1)</script>".into()],
        };
        let mut r = Report {
            id: "run_1".into(),
            suite: "mcp-server".into(),
            kit: "kit@1".into(),
            target: "http://t/mcp?a=<b>".into(),
            started_ms: 0,
            finished_ms: 1500,
            legs: vec![Leg { label: "direct".into(), target: "http://t".into(), outcomes: vec![o] }],
            baseline: None,
            problems: Vec::new(),
            notes: Vec::new(),
            passed: true,
        };
        r.judge();
        let page = render(&r);
        assert!(!page.contains("<script>"), "{page}");
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(page.contains("<td class=\"fail\">FAIL 1/2</td>"));
        assert!(page.contains("id=\"verdict\">FAILED"));
        assert!(page.contains("http://t/mcp?a=&lt;b&gt;"));
    }
}
