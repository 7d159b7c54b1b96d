/**
 * The live fleet page served at `GET /`: plain HTML and one small script
 * (`GET /fleet.js`, no build step, no framework) that polls `GET /fleet`
 * every 2 s. It shows the members, the splits by state with progress,
 * throughput over the last minutes (a ring of completed counts kept in the
 * page), the in-flight splits and the quarantined ones with their failures,
 * with requeue, cancel and drain buttons. The operator types the bearer
 * token into the page; it lives in the script's memory only (never in the
 * HTML, a cookie or storage) and goes out only in the `Authorization`
 * header of an action. Every value from the store is set as text, never as
 * markup.
 *
 * @module
 */

/** The page (static: everything live comes from `/fleet`). */
export const FLEET_PAGE_HTML: string = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>splitlease fleet</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.2em; color: #1d2330; background: #f6f7f9; }
  h1 { font-size: 1.3em; margin: 0 0 .2em; } h2 { font-size: 1.05em; margin: 1.4em 0 .4em; }
  .muted { color: #667; } .bad { color: #b00020; } .ok { color: #176c2c; } .warn { color: #8a5a00; }
  .cards { display: flex; flex-wrap: wrap; gap: .6em; margin: .8em 0; }
  .card { background: #fff; border: 1px solid #dde; border-radius: 6px; padding: .5em .9em; min-width: 7em; }
  .card b { display: block; font-size: 1.5em; }
  table { border-collapse: collapse; background: #fff; width: 100%; }
  th, td { border-bottom: 1px solid #e4e6ea; padding: .3em .5em; text-align: left; vertical-align: top; }
  th { background: #eef0f4; font-weight: 600; }
  td.num { text-align: right; font-variant-numeric: tabular-nums; }
  code, .mono { font-family: ui-monospace, monospace; font-size: .92em; word-break: break-all; }
  progress { width: 22em; height: 1em; vertical-align: middle; }
  #banner { padding: .4em .7em; border-radius: 4px; margin: .5em 0; display: none; }
  #banner.show { display: block; background: #fde8ea; border: 1px solid #e4a0a8; }
  #notice { min-height: 1.4em; margin: .4em 0; }
  button { font: inherit; padding: .15em .6em; cursor: pointer; }
  ul.failures { margin: 0; padding-left: 1.1em; }
  svg { background: #fff; border: 1px solid #dde; }
</style>
<script src="/fleet.js" defer></script>
</head>
<body>
<h1>splitlease fleet <span id="job" class="mono"></span></h1>
<div id="meta" class="muted">loading…</div>
<div id="banner" role="alert"></div>
<div class="cards">
  <div class="card">splits<b id="count-total">–</b></div>
  <div class="card">completed<b id="count-completed" class="ok">–</b></div>
  <div class="card">owned<b id="count-owned">–</b></div>
  <div class="card">unclaimed<b id="count-unclaimed">–</b></div>
  <div class="card">quarantined<b id="count-quarantined" class="bad">–</b></div>
  <div class="card">cancelled<b id="count-cancelled" class="muted">–</b></div>
  <div class="card">unreadable<b id="count-invalid" class="muted">–</b></div>
</div>
<div><progress id="progress" max="1" value="0"></progress> <span id="progress-text"></span></div>
<h2>Throughput</h2>
<div id="throughput" class="muted">measuring…</div>
<svg id="spark" width="480" height="60" viewBox="0 0 480 60" aria-label="completed splits per poll"></svg>
<h2>Operator token</h2>
<form id="token-form"><input id="token" type="password" autocomplete="off" placeholder="bearer token (drainToken)" size="32">
<button type="submit">Use token</button> <span id="token-state" class="muted">no token: actions are refused</span></form>
<div id="notice" aria-live="polite"></div>
<h2>Members <span id="liveness" class="muted"></span></h2>
<table id="members"><thead><tr><th>instance</th><th>runtime</th><th>version</th><th>splits</th><th>beat</th><th>state</th><th></th></tr></thead><tbody></tbody></table>
<h2>Quarantined <button id="requeue-all" type="button">Requeue all</button></h2>
<table id="quarantined"><thead><tr><th>split</th><th>attempts</th><th>epoch</th><th>descriptor</th><th>failures</th><th></th></tr></thead><tbody></tbody></table>
<div id="quarantined-more" class="muted"></div>
<h2>Runnable</h2>
<table id="runnable"><thead><tr><th>split</th><th>owner</th><th>epoch</th><th>attempts</th><th>progress</th><th>descriptor</th></tr></thead><tbody></tbody></table>
<div id="runnable-more" class="muted"></div>
</body>
</html>
`;

/** The page's script. */
export const FLEET_PAGE_SCRIPT: string = `"use strict";
(() => {
  const POLL_MS = 2000, RING = 600; // ten minutes of samples at one poll each 2 s
  let token = ""; // typed by the operator; kept here only
  const ring = []; // { t, completed }
  const $ = (id) => document.getElementById(id);
  const el = (tag, text, cls) => {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  };
  const row = (cells) => {
    const tr = document.createElement("tr");
    for (const c of cells) {
      const td = document.createElement("td");
      if (c instanceof Node) td.appendChild(c);
      else {
        td.textContent = c === null || c === undefined ? "" : String(c);
        if (typeof c === "number") td.className = "num";
      }
      tr.appendChild(td);
    }
    return tr;
  };
  const time = (ms) => new Date(ms).toLocaleTimeString();
  const notice = (text, cls) => { const n = $("notice"); n.textContent = text; n.className = cls || ""; };

  async function getJson(url) {
    const res = await fetch(url, { cache: "no-store" });
    const body = await res.json().catch(() => ({}));
    if (!res.ok) throw new Error(body.error || res.status + " " + res.statusText);
    return body;
  }

  async function act(path, what) {
    if (!token) { notice("Type the operator token first (the drainToken of the workers).", "bad"); return; }
    try {
      const res = await fetch(path, { method: "POST", headers: { authorization: "Bearer " + token } });
      const body = await res.json().catch(() => ({}));
      if (res.ok) notice(body.message || (what + ": " + (body.requeued ?? 0) + " of " + (body.found ?? 0) + " requeued"), "ok");
      else notice(what + " refused (" + res.status + "): " + (body.message || body.error || res.statusText), "bad");
    } catch (e) {
      notice(what + " failed: " + e.message, "bad");
    }
    poll();
  }

  function button(label, path, what, confirmText) {
    const b = el("button", label);
    b.type = "button";
    b.addEventListener("click", () => { if (!confirmText || confirm(confirmText)) act(path, what); });
    return b;
  }

  function renderCounts(v) {
    const c = v.counts;
    for (const k of ["total", "completed", "owned", "unclaimed", "quarantined", "cancelled", "invalid"]) $("count-" + k).textContent = c[k];
    const done = c.completed + c.cancelled;
    $("progress").max = Math.max(1, c.total);
    $("progress").value = done;
    const pct = c.weight > 0 ? Math.round((100 * c.completedWeight) / c.weight) : 0;
    $("progress-text").textContent = done + " of " + c.total + " finished (" + pct + "% of the weight completed)";
    $("job").textContent = "· job " + v.job;
    const plan = v.plan ? "plan " + v.plan.finality + ", " + v.plan.planned + " planned" + (v.plan.outcome ? ", outcome " + v.plan.outcome : "") : "no plan yet";
    const leader = v.leader ? "leader " + v.leader.instance + " (term " + v.leader.term + ")" : "no leader";
    $("meta").textContent = "served by " + v.servedBy.instance + (v.servedBy.isLeader ? " (leader)" : "") + " · " + leader + " · " + plan + " · updated " + time(v.at);
  }

  function renderThroughput(v) {
    ring.push({ t: v.at, completed: v.counts.completed });
    if (ring.length > RING) ring.shift();
    // Splits completed per minute over a window (or over the time the page has been open, if shorter).
    const rate = (minutes) => {
      const since = v.at - minutes * 60000;
      const first = ring.find((s) => s.t >= since) || ring[0];
      const dt = v.at - first.t;
      if (dt <= 0) return "–";
      const per = ((v.counts.completed - first.completed) / dt * 60000).toFixed(1);
      return dt >= minutes * 60000 * 0.9 ? per + " over " + (minutes === 1 ? "the last minute" : minutes + " min")
        : per + " over the " + Math.round(dt / 1000) + " s this page has been open";
    };
    $("throughput").textContent = "splits/min: " + rate(1) + " · " + rate(5) + " · " + rate(10);
    const svg = $("spark");
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    const deltas = ring.slice(1).map((s, i) => Math.max(0, s.completed - ring[i].completed)).slice(-240);
    const max = Math.max(1, ...deltas);
    deltas.forEach((d, i) => {
      const r = document.createElementNS("http://www.w3.org/2000/svg", "rect");
      const h = Math.round((d / max) * 56);
      r.setAttribute("x", String(i * 2)); r.setAttribute("y", String(58 - h));
      r.setAttribute("width", "2"); r.setAttribute("height", String(h)); r.setAttribute("fill", "#3b7dd8");
      svg.appendChild(r);
    });
  }

  function renderMembers(v) {
    $("liveness").textContent = v.liveness.judgedBy === "here"
      ? "(alive as judged by the leader " + v.liveness.by + ")"
      : "(liveness is judged by the leader" + (v.liveness.leader ? ", " + v.liveness.leader : "") + "; a moving beat means alive)";
    const tbody = $("members").tBodies[0];
    tbody.replaceChildren(...v.members.map((m) => {
      const state = m.draining ? "draining" : m.alive === null ? "beat " + m.beat : m.alive ? "alive" : "dead";
      const name = el("span", m.instance + (m.leader ? " ★ leader" : ""), "mono");
      const cell = m.draining ? el("span", "") : button("Drain", "/members/" + encodeURIComponent(m.instance) + "/drain", "drain " + m.instance,
        "Drain " + m.instance + "? It hands its splits over and exits.");
      const tr = row([name, m.runtime, m.version, m.owned + " / " + m.maxInFlight, m.beat, el("span", state, m.alive === false ? "bad" : m.draining ? "warn" : ""), cell]);
      tr.dataset.instance = m.instance;
      return tr;
    }));
  }

  function renderQuarantined(v) {
    const tbody = $("quarantined").tBodies[0];
    tbody.replaceChildren(...v.splits.map((s) => {
      const list = el("ul", null, "failures");
      const failures = s.failures.length ? s.failures : s.lastFailure ? [{ at: null, worker: "?", message: s.lastFailure }] : [];
      for (const f of failures) list.appendChild(el("li", (f.at ? time(f.at) + " " : "") + f.worker + ": " + f.message));
      const actions = el("span");
      actions.append(button("Requeue", "/splits/" + encodeURIComponent(s.id) + "/requeue", "requeue " + s.id),
        " ", button("Cancel", "/splits/" + encodeURIComponent(s.id) + "/cancel", "cancel " + s.id, "Cancel " + s.id + "? It will never run."));
      const tr = row([el("code", s.id), s.attempts, s.epoch, el("code", s.descriptor ?? "(in spec record)"), list, actions]);
      tr.dataset.split = s.id;
      return tr;
    }));
    $("quarantined-more").textContent = v.page.next ? "showing " + v.splits.length + " of " + v.page.matched : v.splits.length ? "" : "none";
  }

  function renderRunnable(v) {
    const tbody = $("runnable").tBodies[0];
    tbody.replaceChildren(...v.splits.map((s) => {
      const wm = s.progress && s.progress.watermark !== null ? "at " + s.progress.watermark : "not started";
      const tr = row([el("code", s.id), s.owner ?? "(unclaimed)", s.epoch, s.attempts, wm, el("code", s.descriptor ?? "(in spec record)")]);
      tr.dataset.split = s.id;
      return tr;
    }));
    $("runnable-more").textContent = v.page.next ? "showing the first " + v.splits.length + " of " + v.page.matched : "";
  }

  async function poll() {
    try {
      const [runnable, quarantined] = await Promise.all([
        getJson("/fleet?state=runnable&limit=50"),
        getJson("/fleet?state=quarantined&limit=100"),
      ]);
      renderCounts(runnable);
      renderThroughput(runnable);
      renderMembers(runnable);
      renderRunnable(runnable);
      renderQuarantined(quarantined);
      $("banner").className = "";
    } catch (e) {
      $("banner").textContent = "Cannot read the fleet: " + e.message + " (retrying every " + POLL_MS / 1000 + " s)";
      $("banner").className = "show";
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("token-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      token = $("token").value.trim();
      $("token").value = "";
      $("token-state").textContent = token ? "token set (kept in this page only)" : "no token: actions are refused";
    });
    $("requeue-all").addEventListener("click", () => {
      if (confirm("Requeue every quarantined split?")) act("/splits/requeue", "requeue all");
    });
    poll();
    setInterval(poll, POLL_MS);
  });
})();
`;
