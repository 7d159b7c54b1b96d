/**
 * The fleet page's job part, a part of its script (`GET /fleet.js`,
 * assembled in `fleet_page_script.ts`, whose helpers it uses): the job's
 * progress bar, rate and ETA, its earlier runs, the pause banner, the
 * completions sparkline and the members table. Apart from the script's
 * helpers and poll loop as the result summary and the split tables are:
 * each part renders one region of the page.
 *
 * @module
 */

/** The job part of the page's script (text spliced into the script's closure). */
export const FLEET_PAGE_JOB: string = `
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
