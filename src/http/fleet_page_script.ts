/**
 * The fleet page's script (`GET /fleet.js`): plain browser JavaScript, no
 * build step. This part holds the helpers (text-only DOM, dates with day
 * and zone, durations), the confirmation dialog, the operator actions, the
 * job's progress, rate and ETA, the completions sparkline, the members and
 * the poll loop; `fleet_page_splits.ts` renders the split tables and the
 * split detail. Every value from the store is set as text, never as markup.
 *
 * @module
 */
import { FLEET_PAGE_RESULT } from "./fleet_page_result.ts";
import { FLEET_PAGE_SPLITS } from "./fleet_page_splits.ts";

const HELPERS = `
  const POLL_MS = 2000;
  // Where the app is mounted ("" at the root, "/ops" under a prefix): every request goes beside the page.
  const BASE = (document.currentScript && document.currentScript.dataset.base) || "";
  let token = ""; // typed by the operator; kept here only
  // How the operator routes are guarded (/fleet's operator.access): token, open, closed or none (a finished job).
  let access = "closed";
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
      if (c && c.cell) { td.className = c.cls || ""; if (c.node) td.appendChild(c.node); else td.textContent = c.text; }
      else if (c instanceof Node) td.appendChild(c);
      else {
        td.textContent = c === null || c === undefined ? "" : String(c);
        if (typeof c === "number") td.className = "num";
      }
      tr.appendChild(td);
    }
    return tr;
  };
  const wide = (c) => ({ cell: true, cls: "wide", node: c instanceof Node ? c : null, text: c instanceof Node ? "" : c ?? "" });
  const pad = (n) => String(n).padStart(2, "0");
  const zoneOf = (d) => {
    const m = -d.getTimezoneOffset();
    const off = "UTC" + (m === 0 ? "" : (m > 0 ? "+" : "-") + pad(Math.floor(Math.abs(m) / 60)) + ":" + pad(Math.abs(m) % 60));
    let name = "";
    try {
      name = (new Intl.DateTimeFormat(undefined, { timeZoneName: "short" }).formatToParts(d).find((p) => p.type === "timeZoneName") || {}).value || "";
    } catch { /* no Intl zone names */ }
    return !name || /^(UTC|GMT)/.test(name) ? off : name + " (" + off + ")";
  };
  // A wall-clock time with its day and zone: 2026-12-02 09:41:07 UTC.
  const when = (ms) => {
    if (ms === null || ms === undefined) return "–";
    const d = new Date(ms);
    return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " + pad(d.getHours()) + ":" +
      pad(d.getMinutes()) + ":" + pad(d.getSeconds()) + " " + zoneOf(d);
  };
  const dur = (ms) => {
    if (ms === null || ms === undefined || !isFinite(ms)) return "–";
    const s = Math.max(0, Math.round(ms / 1000));
    if (s < 60) return s + " s";
    const m = Math.floor(s / 60);
    if (m < 60) return m + " min" + (s % 60 ? " " + pad(s % 60) + " s" : "");
    const h = Math.floor(m / 60);
    return h < 48 ? h + " h " + pad(m % 60) + " min" : Math.floor(h / 24) + " d " + (h % 24) + " h";
  };
  // How long a whole job took: tenths of a second below 10 s (a short job is not "0 s").
  const took = (ms) => ms !== null && ms !== undefined && ms < 10000 ? (Math.max(0, ms) / 1000).toFixed(1) + " s" : dur(ms);
  const pct = (f) => (f >= 0.995 && f < 1 ? "99" : f > 0 && f < 0.01 ? "<1" : String(Math.round(100 * f))) + "%";
  const amount = (n, unit) => {
    if (unit === "bytes") {
      const u = ["B", "KB", "MB", "GB", "TB"];
      let i = 0;
      while (n >= 1000 && i < u.length - 1) { n /= 1000; i++; }
      return (i ? n.toFixed(1) : String(Math.round(n))) + " " + u[i];
    }
    return unit === "fraction" ? pct(n) : Math.round(n).toLocaleString("en-US") + " ids";
  };
  const notice = (text, cls) => { const n = $("notice"); n.textContent = text; n.className = cls || ""; };
  const pill = (text, cls) => el("span", text, "pill " + (cls || text));

  async function getJson(url) {
    const res = await fetch(BASE + url, { cache: "no-store" });
    const body = await res.json().catch(() => ({}));
    if (!res.ok) {
      const e = new Error(body.error || res.status + " " + res.statusText);
      e.gone = res.status === 410 && body.gone === true; // the job's records were deleted
      throw e;
    }
    return body;
  }

  // What the job's outcome makes true (the plan record's, or none yet): stalled (repairable), complete, cancelled
  // (every split cancelled: nothing ran to the end), failed (the planner), or running.
  function ending(v) {
    const o = v.plan && v.plan.outcome, c = v.counts;
    if (o === "allComplete") return c.completed === 0 && c.cancelled > 0 ? "cancelled" : "complete";
    return o === "stalled" ? "stalled" : o === "planFailed" ? "failed" : "running";
  }
  // Where the repair actions are: this page's buttons when its routes take them, else the CLI.
  const repairs = () => access === "token" || access === "open"
    ? "requeue or cancel below" : "requeue or cancel with splitlease requeue / splitlease cancel (this page's actions are off)";

  // An in-page confirmation (a modal dialog): resolves true only on the confirm button.
  function ask(text, label) {
    return new Promise((resolve) => {
      const d = $("confirm"), yes = $("confirm-yes"), no = $("confirm-no");
      $("confirm-text").textContent = text;
      yes.textContent = label;
      const done = (ok) => {
        yes.onclick = no.onclick = d.oncancel = null;
        if (d.open) d.close();
        resolve(ok);
      };
      yes.onclick = () => done(true);
      no.onclick = () => done(false);
      d.oncancel = (ev) => { ev.preventDefault(); done(false); };
      d.showModal();
      no.focus();
    });
  }

  async function act(path, what) {
    try {
      const res = await fetch(BASE + path, { method: "POST", headers: token ? { authorization: "Bearer " + token } : {} });
      const body = await res.json().catch(() => ({}));
      if (res.ok) notice(body.message || (what + ": " + (body.requeued ?? 0) + " of " + (body.found ?? 0) + " requeued"), "ok");
      else notice(what + " refused (" + res.status + "): " + (body.message || body.error || res.statusText), "bad");
    } catch (e) {
      notice(what + " failed: " + e.message, "bad");
    }
    poll();
  }

  // An action button (none where the routes refuse every action): without the token the
  // routes need, no question; then a confirmation naming what it does.
  function button(label, path, what, question) {
    if (access !== "token" && access !== "open") return el("span", "");
    const b = el("button", label);
    b.type = "button";
    b.addEventListener("click", async () => {
      if (access === "token" && !token) { notice("Type the operator token first (the drainToken of the workers).", "bad"); return; }
      if (await ask(question, label)) act(path, what);
    });
    return b;
  }
`;

const JOB = `
  function renderJob(v) {
    const c = v.counts, r = v.rate;
    const w = c.weight > 0 ? c.weight : 1;
    const done = c.completedWeight / w, partial = r.partialWeight / w;
    $("progress-done").style.width = (100 * done).toFixed(2) + "%";
    $("progress-partial").style.width = (100 * (done + partial)).toFixed(2) + "%";
    $("progress-text").textContent = pct(done + partial) + " done · " + c.completed + " of " + c.total + " splits completed" +
      (c.cancelled ? ", " + c.cancelled + " cancelled" : "") + (c.owned ? ", " + c.owned + " owned" : "") +
      (c.unclaimed ? ", " + c.unclaimed + " unclaimed" : "");
    const e = r.eta, s = v.summary, end = ending(v);
    const eta = $("eta");
    // Quarantined splits behind the runnable work: the job stalls once that work is done.
    const stall = e.thenStalled ? " · then stalled on " + c.quarantined + " quarantined split" + (c.quarantined === 1 ? "" : "s") +
      " unless requeued or cancelled (below)" : "";
    if (e.state === "estimated") {
      eta.textContent = (e.thenStalled ? "Runnable work done " : "ETA ") + when(e.at) + " · in " + dur(e.inMs) + stall;
      eta.className = e.thenStalled ? "big warn" : "big";
    } else if (end === "cancelled") {
      eta.textContent = "Cancelled: all " + c.cancelled + " split" + (c.cancelled === 1 ? " was" : "s were") + " cancelled; nothing is left to run";
      eta.className = "big muted";
    } else if (end === "failed") {
      eta.textContent = "Failed: the planner failed for good; fix it and start the workers again (a new leader plans again)";
      eta.className = "big bad";
    } else if (e.state === "done") {
      // Done except skipped splits is not all done: say what was skipped, and not in green.
      eta.textContent = "Finished" + (s.lastCompletedAt !== null ? " " + when(s.lastCompletedAt) : "") + (s.tookMs !== null ? " · took " + took(s.tookMs) : "") +
        (c.cancelled ? " · except " + c.cancelled + " cancelled split" + (c.cancelled === 1 ? "" : "s") + " (skipped)" : "");
      eta.className = c.cancelled ? "big warn" : "big ok";
    } else if (e.state === "stalled") {
      eta.textContent = "Stalled: only " + c.quarantined + " quarantined split" + (c.quarantined === 1 ? " is" : "s are") +
        " left · " + repairs();
      eta.className = "big bad";
    } else {
      eta.textContent = "ETA unknown: no split completed in the last " + dur(r.windowMs || 0) + stall;
      eta.className = "big warn";
    }
    const untimed = r.untimed ? " · " + r.untimed + " completed split(s) have no completion time (older records)" : "";
    if (e.state === "done") {
      // The same window as "took": the whole run, first start to last completion.
      $("rate").textContent = (s.perMinute === null ? "no rate" : s.perMinute.toFixed(1) + " splits/min" +
        (s.recordsPerSecond !== null ? " · " + Math.round(s.recordsPerSecond).toLocaleString("en-US") + " records/s" : "") +
        " over the " + took(s.tookMs) + " it took") + " · from the completion times in the split records" + untimed;
    } else {
      const win = r.windowMs >= 5 * 60000 ? "the last 5 min" : "the " + dur(r.windowMs) + " since the job began";
      $("rate").textContent = (r.perMinute === null ? "no rate yet" : r.perMinute.toFixed(1) + " splits/min over " + win +
        " (" + r.completedInWindow + " completed)") + " · job-wide, from the completion times in the split records" +
        (r.startedAt !== null ? " · running since " + when(r.startedAt) : "") + untimed;
    }
    // Nothing published yet (a rerun before its leader planned): the records shown are the last run's.
    const unplanned = v.plan && v.plan.generation === 0;
    if (unplanned) {
      eta.textContent = v.plan.run > 1
        ? "Run " + v.plan.run + " is not planned yet: its leader plans it once a worker runs (the splits below are run " + (v.plan.run - 1) + "'s)"
        : "Planning: nothing published yet";
      eta.className = "big warn";
    }
    renderResult(v, e.state === "done" && end !== "cancelled" && !unplanned);
    renderPause(v);
    renderRuns(v);
    for (const k of ["total", "completed", "owned", "unclaimed", "quarantined", "cancelled", "invalid"]) $("count-" + k).textContent = c[k];
    if (c.permanent) $("count-quarantined").textContent = c.quarantined + " (" + c.permanent + " permanent)";
    // Red only when there is something to repair.
    $("count-quarantined").className = c.quarantined > 0 ? "bad" : "";
    $("job").textContent = "· job " + v.job;
    const sk = v.plan ? v.plan.result.skipped : null;
    const skipped = sk && (sk.cancelled || sk.permanent)
      ? " (" + [sk.cancelled ? sk.cancelled + " cancelled" : "", sk.permanent ? sk.permanent + " permanently failed" : ""].filter(Boolean).join(", ") + ")" : "";
    const plan = v.plan ? (v.plan.run > 1 ? "run " + v.plan.run + " · " : "") + "plan " + v.plan.finality + ", " + v.plan.planned + " planned" +
      (v.plan.outcome ? ", outcome " + v.plan.outcome + skipped : "") : "no plan yet";
    // A sharded job: its shards, each with its leader and where it stands (one line for all: the page is the job's).
    const leader = v.shards
      ? v.shards.length + " shards: " + v.shards.map((s) => "#" + s.index + " " + (s.leader ? s.leader.instance : "no leader") +
        (s.state === "running" ? "" : " " + s.state)).join(", ")
      : v.leader ? "leader " + v.leader.instance + " (term " + v.leader.term + ")" : "no leader";
    // A large job: what its figures come from (a live index of its records, or the leader's beat while that index is built).
    const ix = v.index ? (v.index.state === "building" ? " · counts from the leader's beat while this worker indexes the " +
      v.index.splits.toLocaleString("en-US") + " splits (" + v.index.applied.toLocaleString("en-US") + " records read)" : " · from a live index of its records") : "";
    $("meta").textContent = "served by " + v.servedBy.instance + (v.servedBy.isLeader ? " (leader)" : "") + " · " + leader + " · " + plan +
      ix + " · updated " + when(v.at);
    const paused = v.plan && v.plan.result.paused;
    document.title = (paused ? "paused" : end === "cancelled" || end === "failed" ? end : e.state === "done" ? "done" : e.state === "stalled" ? "stalled" : pct(done + partial)) +
      " · " + v.job + " · splitlease";
  }

  // A rerun job lists the runs before this one: each one's outcome and what it did.
  function renderRuns(v) {
    const runs = v.plan ? v.plan.history : [];
    $("runs").hidden = runs.length === 0;
    $("runs-table").tBodies[0].replaceChildren(...runs.slice().reverse().map((r) => {
      const o = r.outcome;
      const what = o.kind === "planFailed" ? "planFailed" : o.kind + " · " + o.completed + " completed" +
        (o.kind === "stalled" ? ", " + o.quarantined + " quarantined" : "") + (o.cancelled ? ", " + o.cancelled + " cancelled" : "");
      const tr = row(["run " + r.run, what, r.planned, r.records ?? "–", r.failures ?? 0, r.tookMs !== undefined ? took(r.tookMs) : "–", when(r.finishedAt)]);
      tr.dataset.run = String(r.run);
      return tr;
    }));
  }

  // A paused job says so above its progress, and the operator pauses or resumes the whole job here.
  function renderPause(v) {
    const p = v.plan && v.plan.result.paused, box = $("paused");
    box.hidden = !p;
    if (p) {
      box.textContent = "Paused since " + when(p.at) + (p.by ? " by " + p.by : "") + (p.reason ? ": " + p.reason : "") +
        " · the leader deals nothing new, the workers handed back what they ran, and no outcome is decided until the job is resumed";
      $("eta").textContent = "Paused: nothing runs until the job is resumed";
      $("eta").className = "big warn";
    }
    const open = v.plan && !v.plan.outcome;
    const b = !open ? el("span", "") : p
      ? button("Resume job", "/job/resume", "resume", "Resume " + v.job + "? The leader deals its splits again; each continues from its last commit.")
      : button("Pause job", "/job/pause", "pause", "Pause " + v.job + "? The leader deals nothing new and every worker hands back the split it runs " +
        "(its source commits and stops; no attempt is charged). Nothing runs until you resume.");
    b.id = p ? "resume-job" : "pause-job";
    $("job-actions").replaceChildren(b);
  }

  function renderSpark(v) {
    const svg = $("spark"), counts = v.rate.spark.counts;
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    // A large job's first answers come from the leader's beat: the completion times are in the split records.
    if (!counts.length) {
      $("spark-caption").textContent = "(shown once this worker has indexed the job's split records)";
      $("spark-from").textContent = $("spark-mid").textContent = "";
      return;
    }
    const max = Math.max(1, ...counts), bw = 600 / counts.length;
    counts.forEach((n, i) => {
      if (!n) return;
      const r = document.createElementNS("http://www.w3.org/2000/svg", "rect");
      const h = Math.max(2, Math.round((n / max) * 56));
      r.setAttribute("x", String(i * bw)); r.setAttribute("y", String(60 - h));
      r.setAttribute("width", String(bw - 1)); r.setAttribute("height", String(h)); r.setAttribute("fill", "#3b7dd8");
      svg.appendChild(r);
    });
    const total = counts.reduce((a, b) => a + b, 0), span = counts.length * v.rate.spark.bucketMs;
    $("spark-caption").textContent = total + " in the last " + dur(span) + ", per " + v.rate.spark.bucketMs / 1000 + " s (busiest: " + max + ")";
    $("spark-from").textContent = dur(span) + " ago";
    $("spark-mid").textContent = dur(span / 2) + " ago";
  }

  function renderMembers(v) {
    $("liveness").textContent = v.liveness.judgedBy === "here"
      ? "(alive as judged by the leader " + v.liveness.by + ")"
      : "(judged by each member's lease against its last beat: past it, unresponsive while splits still name it, then gone)";
    // splitlease ui processes are operators' shells, not workers: named below the table, never drained from here.
    const workers = v.members.filter((m) => !m.ui), uis = v.members.filter((m) => m.ui);
    $("members-also").textContent = uis.length ? "Also watching (splitlease ui, no work): " + uis.map((m) => m.instance +
      (m.instance === v.servedBy.instance ? " (serves this page)" : "") + (m.leader ? " ★ leader" : "")).join(", ") : "";
    // No worker: say why, as the outcome makes true (a stalled job is not over: it waits for a repair).
    const end = ending(v);
    const why = end === "stalled" ? "none: the workers left on the stall; " + repairs() + " reopens the job, then start workers to run it"
      : end === "complete" ? "none: the job is complete and its workers left"
      : end === "cancelled" ? "none: every split was cancelled and the workers left"
      : end === "failed" ? "none: the job failed (its planner) and its workers left" : "none";
    const none = document.createElement("tr"), cell = el("td", why, "muted");
    cell.colSpan = 8;
    none.appendChild(cell);
    if (!workers.length) { $("members").tBodies[0].replaceChildren(none); return; }
    $("members").tBodies[0].replaceChildren(...workers.map((m) => {
      const name = el("span", m.instance + (m.leader ? " ★ leader" : ""), "mono");
      const past = m.activity === "gone" || m.activity === "unresponsive";
      const state = pill(m.activity, past ? "dead" : m.activity);
      const seen = m.lastBeatAt !== null ? dur(Math.max(0, v.at - m.lastBeatAt)) + " ago" : "beat " + m.beat;
      // Nothing to drain on a member past its lease: it writes nothing more.
      const cell = m.draining || past ? el("span", "") : button("Drain", "/members/" + encodeURIComponent(m.instance) + "/drain", "drain " + m.instance,
        "Drain " + m.instance + "? It hands its " + m.owned + " split(s) over to the others and exits.");
      const tr = row([name, wide(m.runtime), wide(m.version), m.owned + " / " + m.maxInFlight, state, seen,
        v.basis === "beat" ? "–" : m.perMinute.toFixed(1), cell]);
      tr.dataset.instance = m.instance;
      return tr;
    }));
  }
`;

const MAIN = `
  // The token box only where the routes take a token and there is something to act on.
  function renderOperator(v) {
    const c = v.counts, busy = c.quarantined + c.runnable > 0 || v.members.some((m) => !m.ui);
    $("operator").hidden = !(access === "token" && busy);
    $("operator-note").textContent = access === "closed" && busy
      ? "Requeue, cancel and drain are off here: the workers have no drainToken (set one, or drainOpen on a private address)."
      : access === "none" ? "The job is finished: this page shows its records read-only." : "";
    $("requeue-all").hidden = access !== "token" && access !== "open";
  }

  let seq = 0, filterChosen = false;
  async function poll() {
    const mine = ++seq;
    const filter = $("filter").value, match = $("search").value.trim();
    const url = (state, limit, search) => "/fleet?" + (state ? "state=" + state + "&" : "") + "limit=" + limit +
      (search && match ? "&match=" + encodeURIComponent(match) : "");
    try {
      const lists = filter === "runnable" ? [url("owned", 100, true), url("unclaimed", 15, true)] : [url(filter === "all" ? "" : filter, 100, true)];
      const [quarantined, ...views] = await Promise.all([getJson(url("quarantined", 100, false)), ...lists.map(getJson)]);
      if (mine !== seq) return; // a newer poll (a filter typed meanwhile) renders
      const v = views[0];
      if (!filterChosen && filter === "runnable" && v.rate.eta.state === "done") {
        // Nothing runnable is left: a finished job lists all its splits unless the operator picked a filter.
        filterChosen = true;
        $("filter").value = "all";
        return poll();
      }
      access = v.operator ? v.operator.access : "closed";
      renderOperator(v);
      renderJob(v);
      renderSpark(v);
      renderMembers(v);
      renderSplits(views, filter, match);
      renderQuarantined(quarantined);
      renderRecent(v);
      await refreshDetail();
      $("banner").className = "";
      document.body.classList.remove("gone");
      $("gone").hidden = true;
    } catch (e) {
      if (e.gone) return renderGone(e.message);
      $("banner").textContent = "Cannot read the fleet: " + e.message + " (retrying every " + POLL_MS / 1000 + " s)";
      $("banner").className = "show";
    }
  }

  // The job's records were deleted (splitlease delete): nothing of it is left to show or to act on.
  function renderGone(message) {
    $("banner").className = "";
    $("gone-text").textContent = "Gone: " + message + ". Nothing of it is left to show or to repair; this page looks again every " +
      POLL_MS / 1000 + " s (a new run under the same name shows here).";
    $("gone").hidden = false;
    document.body.classList.add("gone");
    document.title = "gone · splitlease";
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("token-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      token = $("token").value.trim();
      $("token").value = "";
      $("token-state").textContent = token ? "token set (kept in this page only)" : "no token: actions are refused";
      notice("");
    });
    $("filters").addEventListener("submit", (ev) => { ev.preventDefault(); poll(); });
    let typing;
    $("search").addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(poll, 250); });
    $("filter").addEventListener("change", () => { filterChosen = true; poll(); });
    $("requeue-all").addEventListener("click", async () => {
      if (access === "token" && !token) { notice("Type the operator token first (the drainToken of the workers).", "bad"); return; }
      const n = $("count-quarantined").textContent;
      if (await ask("Requeue all " + n + " quarantined split(s)? Each runs again from its last commit with its attempts reset.", "Requeue all")) {
        act("/splits/requeue", "requeue all");
      }
    });
    window.addEventListener("hashchange", () => openDetail(fromHash()));
    openDetail(fromHash());
    poll();
    setInterval(poll, POLL_MS);
  });
`;

/** The fleet page's browser script: polls `/fleet`, renders the tables, posts operator actions with the token. */
export const FLEET_PAGE_SCRIPT: string = `"use strict";
(() => {${HELPERS}${JOB}${FLEET_PAGE_RESULT}${FLEET_PAGE_SPLITS}${MAIN}})();
`;
