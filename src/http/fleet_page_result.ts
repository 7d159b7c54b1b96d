/**
 * The fleet page's result summary, a part of its script (`GET /fleet.js`,
 * assembled in `fleet_page_script.ts`, whose helpers it uses): once the job
 * is done the page leads with what it did — splits, records, retries,
 * failures, cuts, how long it took, and the rates over that same time — from
 * the view's `summary` (the split records), so a page opened after the
 * workers left shows the same as one that watched the whole run.
 *
 * @module
 */

/** The result part of the page's script (text spliced into the script's closure). */
export const FLEET_PAGE_RESULT: string = `
  const count = (n, one, many) => Math.round(n).toLocaleString("en-US") + " " + (n === 1 ? one : many);

  function renderResult(v, done) {
    const box = $("result");
    box.hidden = !done;
    if (!done) return;
    const s = v.summary, c = v.counts;
    const list = $("result-list");
    const items = [
      ["splits", count(c.completed, "completed", "completed") + (c.cancelled ? " · " + c.cancelled + " cancelled (skipped)" : "")],
      ["records", s.splitsWithRecords > 0 ? s.records.toLocaleString("en-US") : "none reported (the source passes no records count)"],
      ["retries", s.retries ? count(s.retries, "run", "runs") + " after a failed or lost run" : "none"],
      ["failures", s.failures ? count(s.failures, "failed run", "failed runs") : "none"],
      ["lost owners", s.lost ? count(s.lost, "run", "runs") + " taken over from a gone owner" : "none"],
      ["cuts", s.cuts ? count(s.cuts, "cut", "cuts") + " of a running split's remaining work" : "none"],
      ["took", s.tookMs === null ? "–" : took(s.tookMs) + " (" + when(s.startedAt) + " to " + when(s.lastCompletedAt) + ")"],
      ["rate", s.tookMs ? [s.perMinute !== null ? s.perMinute.toFixed(1) + " splits/min" : "",
        s.recordsPerSecond !== null ? Math.round(s.recordsPerSecond).toLocaleString("en-US") + " records/s" : ""].filter(Boolean).join(" · ") +
        " over the " + took(s.tookMs) + " it took" : "–"],
    ];
    list.replaceChildren(...items.flatMap(([k, text]) => [el("dt", k), el("dd", text)]));
    for (const dd of list.querySelectorAll("dd")) dd.dataset.k = dd.previousSibling.textContent;
  }
`;
