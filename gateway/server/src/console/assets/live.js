// The call page's live journal: each new event of the call arrives over server-sent events
// (from the gateway's own /console/…/events, with the session cookie) and is appended to the
// journal; the state and outcome follow. Text only (textContent), never markup. An `unknown`
// call reloads the page once, which then offers the reconcile form.
"use strict";
(() => {
  const table = document.getElementById("journal");
  const url = table && table.dataset.events;
  if (!url) return;
  const rows = table.tBodies[0];
  const source = new EventSource(url);
  const settled = ["succeeded", "failed", "canceled", "unknown"];
  source.addEventListener("change", (message) => {
    const e = JSON.parse(message.data);
    const row = rows.insertRow();
    row.className = "live";
    for (const v of [e.seq, e.at, e.what]) row.insertCell().textContent = String(v);
    const code = document.createElement("code");
    code.textContent = e.detail;
    row.insertCell().appendChild(code);
    document.getElementById("state").textContent = e.state;
    document.getElementById("outcome").textContent = e.outcome;
    if (settled.includes(e.state)) {
      source.close();
      table.dataset.settled = "true";
      if (e.state === "unknown") location.reload();
    }
  });
})();
