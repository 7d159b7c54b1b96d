/**
 * The fleet page's split views, a part of its script (`GET /fleet.js`,
 * assembled in `fleet_page_script.ts`, whose helpers it uses): the split
 * table (running first, with the fraction done and how long the current
 * tenancy has lasted), the quarantined splits with their failures, the
 * recently completed splits, and one split in detail — its tenancies
 * (owner, epoch, from, to, how long, how it ended), failures (with their
 * stacks' first frames, folded) and estimate —
 * opened by clicking a split id (or `#split=<id>` in the address).
 *
 * @module
 */

/** The split part of the page's script (text spliced into the script's closure). */
export const FLEET_PAGE_SPLITS: string = `
  let selected = null; // the split shown in detail
  const fromHash = () => { const m = /^#split=([A-Za-z0-9_-]{1,128})$/.exec(location.hash); return m ? m[1] : null; };
  const stateOf = (s) => s.status !== "runnable" ? s.status + (s.permanent ? " (permanent)" : "") : s.owner ? "owned" : "unclaimed";
  const stateCls = (s) => s.status !== "runnable" ? s.status : s.owner ? "owned" : "unclaimed";
  const link = (id) => {
    const b = el("button", id, "link");
    b.type = "button";
    b.title = "show this split in detail";
    b.addEventListener("click", () => {
      location.hash = "split=" + id;
      openDetail(id);
      $("detail").scrollIntoView({ block: "start" });
    });
    return b;
  };
  const doneCell = (s) => {
    if (s.fraction === null) {
      return s.progress && s.progress.watermark !== null ? "at " + s.progress.watermark + " (no estimate)" : s.status === "runnable" ? "not started" : "";
    }
    const wrap = el("span");
    const bar = el("span", null, "bar small"), fill = el("span");
    fill.style.width = (100 * s.fraction).toFixed(1) + "%";
    bar.appendChild(fill);
    wrap.append(bar, " " + pct(s.fraction));
    return wrap;
  };
  const descriptor = (s) => el("code", s.descriptor ?? "(in spec record)");

  function renderSplits(views, filter, match) {
    const at = views[0].at;
    const splits = views.flatMap((v) => v.splits);
    $("splits").tBodies[0].replaceChildren(...splits.map((s) => {
      const last = s.tenancies[s.tenancies.length - 1];
      const owner = s.owner ?? (s.completedAt !== null && last ? "(" + last.owner + ")" : "");
      const tr = row([link(s.id), pill(stateOf(s), stateCls(s)), owner, doneCell(s), s.since !== null ? dur(at - s.since) : "",
        wide(s.epoch), wide(s.attempts), wide(descriptor(s))]);
      tr.dataset.split = s.id;
      if (s.id === selected) tr.className = "selected";
      return tr;
    }));
    const parts = views.map((v) => {
      const what = v.page.state ? v.page.state.join(", ") : "all";
      return what + ": " + (v.page.next ? "the first " + v.splits.length + " of " + v.page.matched : v.page.matched);
    });
    $("splits-more").textContent = (splits.length ? "" : "none · ") + parts.join(" · ") + (match ? " matching “" + match + "”" : "") +
      (filter === "runnable" && splits.length ? " · owned (running) first, then unclaimed" : "");
    // A large job's split lists come from the worker's index of its records, once it has read them.
    if (views[0].basis === "beat") $("splits-more").textContent = parts.join(" · ") + " · listed once this worker has indexed the job's split records";
  }

  function renderQuarantined(v) {
    $("quarantined").tBodies[0].replaceChildren(...v.splits.map((s) => {
      const list = el("ul", null, "failures");
      const failures = s.failures.length ? s.failures : s.lastFailure ? [{ at: null, worker: "?", message: s.lastFailure }] : [];
      for (const f of failures) list.appendChild(el("li", (f.at ? when(f.at) + " " : "") + f.worker + (f.permanent ? " (permanent)" : "") + ": " + f.message));
      const actions = el("span");
      actions.append(
        button("Requeue", "/splits/" + encodeURIComponent(s.id) + "/requeue", "requeue " + s.id,
          "Requeue " + s.id + "? It runs again from its last commit, its " + s.attempts + " attempt(s) reset." +
          (s.permanent ? " Its source said the failure is permanent: fix its input first, or it fails again." : "")),
        " ",
        button("Cancel", "/splits/" + encodeURIComponent(s.id) + "/cancel", "cancel " + s.id,
          "Cancel " + s.id + "? It will never run; the job can then end without it."),
      );
      // A permanent failure: the source said retrying cannot help (fix the input, then requeue; or cancel).
      const attempts = s.permanent ? el("span") : s.attempts;
      if (s.permanent) attempts.append(s.attempts + " ", pill("permanent"));
      const tr = row([link(s.id), attempts, wide(s.epoch), wide(descriptor(s)), list, actions]);
      tr.dataset.split = s.id;
      return tr;
    }));
    $("requeue-all").disabled = v.splits.length === 0 && v.counts.quarantined === 0;
    $("quarantined-more").textContent = v.basis === "beat" ? (v.counts.quarantined ? v.counts.quarantined + " quarantined: listed once this worker has indexed the job's split records" : "none")
      : v.page.next ? "showing " + v.splits.length + " of " + v.page.matched : v.splits.length ? "" : "none";
  }

  function renderRecent(v) {
    $("recent").tBodies[0].replaceChildren(...v.recent.map((s) => {
      // Who finished it, and how long it took from its first tenancy on record (every owner, every attempt).
      const t = s.tenancies[s.tenancies.length - 1], first = s.tenancies[0];
      const tr = row([link(s.id), when(s.completedAt) + " (" + dur(v.at - s.completedAt) + " ago)", t ? t.owner : "",
        first ? dur(s.completedAt - first.from) + (s.tenancies.length > 1 ? " (" + s.tenancies.length + " tenancies)" : "") : "",
        wide(s.epoch), wide(s.attempts)]);
      tr.dataset.split = s.id;
      return tr;
    }));
    const untimed = v.rate.untimed;
    $("recent-more").textContent = v.recent.length ? "the last " + v.recent.length + " of " + v.counts.completed + " completed"
      : v.basis === "beat" ? "shown once this worker has indexed the job's split records"
      : untimed ? untimed + " completed, none with a completion time" : "none yet";
  }

  function openDetail(id) {
    selected = id;
    const box = $("detail");
    if (!id) { box.hidden = true; box.replaceChildren(); return; }
    box.hidden = false;
    if (!box.firstChild) box.append(el("h2", "Split " + id), el("p", "loading…", "muted"));
    refreshDetail();
  }

  async function refreshDetail() {
    if (!selected) return;
    const id = selected, box = $("detail");
    let body;
    try {
      body = await getJson("/fleet/splits/" + encodeURIComponent(id));
    } catch (e) {
      if (id === selected) box.replaceChildren(heading(id), el("p", "Cannot read split " + id + ": " + e.message, "bad"));
      return;
    }
    if (id !== selected) return;
    const s = body.split, at = body.at;
    const dl = el("dl");
    const item = (k, v) => dl.append(el("dt", k), v instanceof Node ? wrapDd(v) : el("dd", v));
    item("state", stateOf(s) + (s.owner ? " on " + s.owner : ""));
    item("epoch · attempts · weight", s.epoch + " · " + s.attempts + " · " + s.weight);
    if (s.parent) item("cut from", link(s.parent));
    if (s.cuts) item("cut", s.cuts + " time(s): residual work went to new splits");
    if (s.since !== null) item("current tenancy", "since " + when(s.since) + " (" + dur(at - s.since) + ")");
    if (s.completedAt !== null) item("completed", when(s.completedAt));
    const e = s.estimate;
    item("progress", (s.progress && s.progress.watermark !== null ? "watermark " + s.progress.watermark : "no watermark") +
      (e ? " · " + amount(e.left, e.unit) + " of " + amount(e.total, e.unit) + " left (" + pct(s.fraction) + " done)" : " · no estimate from the source"));
    if (s.progress && s.progress.state !== null) item("source state", el("code", s.progress.state));
    item("descriptor", descriptor(s));
    const hist = el("table");
    hist.append(el("thead"), el("tbody"));
    hist.tHead.append(row(["epoch", "owner", "from", "to", "lasted", "ended"]));
    for (const th of hist.tHead.querySelectorAll("td")) th.replaceWith(el("th", th.textContent));
    hist.tBodies[0].append(...s.tenancies.map((t) => row([t.epoch, t.owner, when(t.from), t.to !== undefined ? when(t.to) : "now",
      dur(t.to !== undefined ? t.to - t.from : at - t.from), t.end ?? "open (now)"])));
    const fails = el("ul", null, "failures");
    for (const f of s.failures) fails.appendChild(failureItem(f));
    const actions = el("div");
    if (s.status === "quarantined") {
      actions.append(button("Requeue", "/splits/" + encodeURIComponent(s.id) + "/requeue", "requeue " + s.id,
        "Requeue " + s.id + "? It runs again from its last commit, its " + s.attempts + " attempt(s) reset." +
          (s.permanent ? " Its source said the failure is permanent: fix its input first, or it fails again." : "")), " ");
    }
    if (s.status === "runnable" || s.status === "quarantined") {
      actions.append(button("Cancel", "/splits/" + encodeURIComponent(s.id) + "/cancel", "cancel " + s.id,
        "Cancel " + s.id + "? It will never run; the job can then end without it."));
    }
    // What it did in the job's earlier runs (a rerun job).
    const earlier = el("ul", null, "failures");
    for (const r of s.runs) {
      earlier.appendChild(el("li", "run " + r.run + ": " + r.status + " at epoch " + r.epoch + " · " + r.attempts + " attempt(s)" +
        (r.records !== undefined ? " · " + r.records.toLocaleString("en-US") + " records" : "") + (r.completedAt ? " · completed " + when(r.completedAt) : "") +
        (r.lastFailure ? " · last failure" + (r.permanent ? " (permanent)" : "") + ": " + r.lastFailure : "")));
    }
    const tenancies = el("div", null, "scroll");
    tenancies.appendChild(s.tenancies.length ? hist : el("p", "none recorded (the record predates tenancy history)", "muted"));
    box.replaceChildren(heading(id), dl, el("h3", "Tenancies (the last " + s.tenancies.length + ", oldest first)"), tenancies,
      el("h3", "Failures"), s.failures.length ? fails : el("p", "none", "muted"),
      ...(s.runs.length ? [el("h3", "Earlier runs (this is run " + s.run + ")"), earlier] : []), actions);
    for (const tr of document.querySelectorAll("#splits tbody tr")) tr.className = tr.dataset.split === id ? "selected" : "";
  }

  // A failure with its stack's first frames, folded (the record keeps a bounded few).
  function failureItem(f) {
    const li = el("li", when(f.at) + " " + f.worker + (f.permanent ? " (permanent)" : "") + ": " + f.message);
    if (f.stack) {
      const at = f.stack.indexOf("\\n"), more = el("details", null, "stack");
      more.append(el("summary", at < 0 ? f.stack : f.stack.slice(0, at)), el("pre", at < 0 ? "" : f.stack.slice(at + 1)));
      li.appendChild(more);
    }
    return li;
  }
  function wrapDd(node) { const dd = el("dd"); dd.appendChild(node); return dd; }
  function heading(id) {
    const h = el("h2", "Split "), close = el("button", "Close");
    h.appendChild(el("code", id));
    close.type = "button";
    close.addEventListener("click", () => { history.replaceState(null, "", location.pathname); openDetail(null); });
    h.appendChild(close);
    return h;
  }
`;
