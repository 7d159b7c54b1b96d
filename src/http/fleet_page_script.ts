/**
 * The fleet page's script (`GET /fleet.js`): plain browser JavaScript, no
 * build step. This part holds the helpers (text-only DOM, dates with day
 * and zone, durations), the confirmation dialog, the operator actions and
 * the poll loop; `fleet_page_job.ts` renders the job's progress, rate and
 * ETA, the completions sparkline and the members, `fleet_page_result.ts`
 * the result summary, `fleet_page_splits.ts` the split tables and the
 * split detail. Every value from the store is set as text, never as markup.
 *
 * @module
 */
import { FLEET_PAGE_JOB } from "./fleet_page_job.ts";
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
(() => {${HELPERS}${FLEET_PAGE_JOB}${FLEET_PAGE_RESULT}${FLEET_PAGE_SPLITS}${MAIN}})();
`;
