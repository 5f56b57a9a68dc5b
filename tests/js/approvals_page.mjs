// The gateway's console in headless Chromium (Debian's, driven by playwright-core): sign in,
// list the held calls, open one and approve it; a cross-site form post and a same-origin post
// without the CSRF token are both refused and change nothing; the other call is denied with a
// reason; the calls page lists both; an unknown write is found under "Unknown" and reconciled
// as applied.
//
// Usage: node approvals_page.mjs <gateway base> <admin token> <id to approve> <id to deny> <screenshot dir> <unknown id>
// Prints one JSON line per check: {check, ok, detail}.
import http from "node:http";
import { chromium } from "playwright-core";

const [base, token, approveId, denyId, shots, unknownId] = process.argv.slice(2);
const check = (name, ok, detail) => console.log(JSON.stringify({ check: name, ok: !!ok, detail: String(detail ?? "") }));

// Another origin (same host, another port) serving a page that posts the approval form itself.
const attacker = http.createServer((_, res) => {
  res.setHeader("content-type", "text/html");
  res.end(`<!doctype html><form id="f" method="post" action="${base}/console/approvals/${denyId}/approve">
    <input name="csrf" value="guessed"></form><script>document.getElementById("f").submit()</script>`);
});
await new Promise((r) => attacker.listen(0, "127.0.0.1", r));
const attackerUrl = `http://127.0.0.1:${attacker.address().port}/`;

const browser = await chromium.launch({
  executablePath: process.env.SWITCHYARD_CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
try {
  const page = await browser.newPage();
  const state = async (id) => {
    await page.goto(`${base}/console/approvals/${id}`);
    return (await page.textContent("#state"))?.trim();
  };

  await page.goto(`${base}/console/approvals`);
  check("an unsigned visit lands on the sign-in form", page.url().endsWith("/console/login"), page.url());
  await page.fill("input[name=token]", token);
  await page.fill("input[name=name]", "reviewer");
  await page.click("button[type=submit]");
  await page.waitForSelector("#held");
  const rows = await page.$$eval("#held tbody tr", (trs) => trs.map((t) => t.dataset.id));
  check("the list shows both held calls", rows.includes(approveId) && rows.includes(denyId), rows);
  await page.screenshot({ path: `${shots}/approvals-list.png`, fullPage: true });

  await page.click(`a[href="/console/approvals/${approveId}"]`);
  await page.waitForSelector("#approve");
  check("the call's page shows it waiting, with its arguments", (await page.textContent("#state")).trim() === "awaiting_approval"
    && (await page.textContent("#request")).includes("page-1"), await page.textContent("main"));
  await page.screenshot({ path: `${shots}/approvals-call.png`, fullPage: true });
  await page.click("#approve");
  await page.waitForSelector(".notice");
  const notice = await page.textContent(".notice");
  const left = await page.$$eval("#held tbody tr", (trs) => trs.map((t) => t.dataset.id));
  check("approving goes back to the list, which no longer holds it", notice.includes("approved") && !left.includes(approveId), `${notice} ${left}`);

  // A cross-site post: the browser sends the session cookie (same site, another port), but
  // the origin is not the page's.
  const [crossSite] = await Promise.all([
    page.waitForResponse((r) => r.url().includes(`/console/approvals/${denyId}/approve`)),
    page.goto(attackerUrl),
  ]);
  check("a cross-site form post is refused", crossSite.status() === 403, `${crossSite.status()} ${await crossSite.text()}`);
  check("and changes nothing", (await state(denyId)) === "awaiting_approval", await page.textContent("main"));

  // From the page's own origin, a form without the CSRF token.
  const [noToken] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith(`/console/approvals/${denyId}/approve`)),
    page.evaluate((id) => {
      const f = document.createElement("form");
      f.method = "post";
      f.action = `/console/approvals/${id}/approve`;
      document.body.append(f);
      f.submit();
    }, denyId),
  ]);
  const noTokenText = await noToken.text();
  check("a same-origin post without the CSRF token is refused", noToken.status() === 403 && noTokenText.includes("CSRF"), `${noToken.status()} ${noTokenText}`);
  check("and changes nothing either", (await state(denyId)) === "awaiting_approval", await page.textContent("main"));

  await page.fill("input[name=reason]", "not during the freeze");
  await page.click("#deny");
  await page.waitForSelector(".notice");
  check("denying says so", (await page.textContent(".notice")).includes("denied"), await page.textContent("main"));
  await page.screenshot({ path: `${shots}/approvals-after.png`, fullPage: true });

  // The calls page lists both, the denied one failed.
  await page.click("a[href='/console/invocations']");
  await page.waitForSelector("#calls");
  const states = await page.$$eval("#calls tbody tr", (trs) => Object.fromEntries(trs.map((t) => [t.dataset.id, t.dataset.state])));
  check("the calls page shows both, the denied one failed", states[denyId] === "failed" && approveId in states, JSON.stringify(states));
  await page.screenshot({ path: `${shots}/calls.png`, fullPage: true });

  // An unknown write: found under "Unknown", reconciled as applied from its page.
  await page.click("a[href='/console/invocations?state=unknown']");
  await page.waitForSelector("#calls");
  const unknown = await page.$$eval("#calls tbody tr.unknown", (trs) => trs.map((t) => t.dataset.id));
  check("the unknown write is listed under Unknown, marked", unknown.includes(unknownId), JSON.stringify(unknown));
  await page.click(`a[href="/console/invocations/${unknownId}"]`);
  await page.waitForSelector("#applied");
  await page.screenshot({ path: `${shots}/unknown.png`, fullPage: true });
  await page.fill("input[name=result]", '{"counted": "by hand"}');
  await page.click("#applied");
  await page.waitForSelector(".notice");
  check("reconciled as applied, it succeeded", (await state(unknownId)) === "succeeded", await page.textContent("main"));
} catch (e) {
  check("the page script ran to the end", false, e?.stack ?? e);
} finally {
  await browser.close();
  attacker.close();
}
