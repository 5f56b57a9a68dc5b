// The gateway's console in headless Chromium (Debian's, driven by playwright-core): the
// operator signs in and watches a slow call's journal grow live to its end (no reload); finds
// the tool whose schema changed withheld on the upstreams page and approves it; a post without the CSRF token is refused; signed in for another tenant, the
// first tenant's call is neither listed nor shown.
//
// Usage: node console_upstreams.mjs <gateway base> <admin token> <screenshot dir> <a call of tenant "default"> <a slow call>
// Prints one JSON line per check: {check, ok, detail}.
import { chromium } from "playwright-core";

const [base, token, shots, foreignId, slowId] = process.argv.slice(2);
const check = (name, ok, detail) => console.log(JSON.stringify({ check: name, ok: !!ok, detail: String(detail ?? "") }));

const browser = await chromium.launch({
  executablePath: process.env.SWITCHYARD_CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
const signIn = async (page, tenant) => {
  await page.goto(`${base}/console/login`);
  await page.fill("input[name=token]", token);
  await page.fill("input[name=tenant]", tenant);
  await page.fill("input[name=name]", "reviewer");
  await page.click("button[type=submit]");
  await page.waitForLoadState();
};
try {
  const page = await browser.newPage();
  await signIn(page, "default");

  // A call under way: its page follows the journal live until the call settles.
  await page.goto(`${base}/console/invocations/${slowId}`);
  const before = (await page.textContent("#state")).trim();
  check("the slow call's page opens while it runs", ["admitted", "dispatching"].includes(before), before);
  await page.evaluate(() => { window.stayed = true; });
  await page.waitForFunction(() => document.getElementById("state").textContent === "succeeded", null, { timeout: 20000 });
  const live = await page.$$eval("#journal tbody tr.live", (trs) => trs.map((t) => t.cells[2].textContent));
  const stayed = await page.evaluate(() => window.stayed === true);
  const outcome = await page.textContent("#outcome");
  check("the journal grows live to the end, the page never reloads", stayed && live.length > 0 && outcome.includes("succeeded"),
    `${stayed} ${JSON.stringify(live)} ${outcome}`);
  await page.screenshot({ path: `${shots}/live-journal.png`, fullPage: true });

  await page.click("a[href='/console/upstreams']");
  await page.waitForSelector("#pins");
  const row = "#pins tr[data-tool='drift_tool'].unknown";
  check("the changed tool is listed withheld", await page.$(row), await page.textContent("main"));
  await page.screenshot({ path: `${shots}/upstreams-withheld.png`, fullPage: true });

  // The same form without its CSRF token is refused and changes nothing.
  // (Sent with the page's cookies and its own Origin: the page itself runs no script.)
  const post = await page.request.post(`${base}/console/upstreams/fx/approve`, {
    form: { tool: "drift_tool" }, headers: { origin: base }, maxRedirects: 0,
  });
  const refused = post.status();
  await page.reload();
  check("a post without the CSRF token is refused (403), the tool still withheld", refused === 403 && await page.$(row), refused);

  await page.click(`${row} button.approve`);
  await page.waitForSelector(".notice");
  const notice = await page.textContent(".notice");
  const status = await page.textContent("#pins tr[data-tool='drift_tool'] .status");
  check("approving says so and the tool is approved", notice.includes("approved") && status.trim() === "approved", `${notice} / ${status}`);
  await page.screenshot({ path: `${shots}/upstreams-approved.png`, fullPage: true });

  // The operator's other pages: the audit log's verification, the tenant's artifacts.
  await page.click("a[href='/console/audit']");
  await page.waitForSelector("#verdict");
  check("the audit page says what it found", (await page.textContent("#verdict")).includes("audit log"), await page.textContent("main"));
  await page.screenshot({ path: `${shots}/audit.png`, fullPage: true });
  await page.click("a[href='/console/artifacts']");
  await page.screenshot({ path: `${shots}/artifacts.png`, fullPage: true });

  // Another tenant: the first tenant's call is neither listed nor shown.
  await page.click("form.who button");
  await signIn(page, "other");
  await page.goto(`${base}/console/invocations`);
  const listed = await page.$$eval("#calls tbody tr", (trs) => trs.map((t) => t.dataset.id)).catch(() => []);
  check("another tenant's list does not hold the call", !listed.includes(foreignId), JSON.stringify(listed));
  const resp = await page.goto(`${base}/console/invocations/${foreignId}`);
  check("another tenant's call is not found", resp.status() === 404, `${resp.status()} ${await page.textContent("main")}`);
  await page.screenshot({ path: `${shots}/other-tenant.png`, fullPage: true });
} catch (e) {
  check("the page script ran to the end", false, e?.stack ?? e);
} finally {
  await browser.close();
}
