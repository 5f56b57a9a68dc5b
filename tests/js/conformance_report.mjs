// A `switchyard conformance` HTML report in headless Chromium (Debian's, driven by
// playwright-core): the page renders its verdict, the results table with one column per leg,
// the failing cells marked, and the failure's messages; a full-page screenshot is saved.
//
// Usage: node conformance_report.mjs <report.html> <screenshot.png> <failing scenario> <legs>
// Prints one JSON line per check: {check, ok, detail}.
import { chromium } from "playwright-core";

const [report, shot, failing, legs] = process.argv.slice(2);
const check = (name, ok, detail) => console.log(JSON.stringify({ check: name, ok: !!ok, detail: String(detail ?? "") }));

const browser = await chromium.launch({
  executablePath: process.env.SWITCHYARD_CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  await page.goto(`file://${report}`);
  const verdict = (await page.textContent("#verdict")).trim();
  check("the verdict is shown", verdict === "FAILED", verdict);
  const heads = await page.$$eval("#results thead th", (ths) => ths.map((t) => t.textContent));
  check("one column per leg", heads.length === 3 + Number(legs), JSON.stringify(heads));
  const rows = await page.$$eval("#results tbody tr", (trs) => trs.map((t) => [...t.cells].map((c) => [c.textContent, c.className])));
  const bad = rows.find((r) => r[1][0] === failing);
  check("the failing scenario's cell is marked", bad && bad.slice(3).some(([text, cls]) => cls === "fail" && text.startsWith("FAIL")), JSON.stringify(bad));
  const passing = rows.filter((r) => r.slice(3).every(([, cls]) => cls === "pass")).length;
  check("the passing rows are there too", passing >= 1 && rows.length >= 2, `${passing} of ${rows.length}`);
  const color = await page.$eval("#results td.fail", (td) => getComputedStyle(td).backgroundColor);
  check("a failing cell is coloured (styles are inline, nothing external)", color === "rgb(255, 235, 233)", color);
  const problems = await page.$$eval("#problems li", (lis) => lis.map((l) => l.textContent));
  check("the problem names the scenario", problems.some((p) => p.includes(failing)), JSON.stringify(problems));
  await page.screenshot({ path: shot, fullPage: true });
  check("screenshot saved", true, shot);
} finally {
  await browser.close();
}
