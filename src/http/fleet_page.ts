/**
 * The live fleet page served at `GET /`: plain HTML, one stylesheet
 * (`GET /fleet.css`, `fleet_page_style.ts`) and one small script
 * (`GET /fleet.js`, `fleet_page_script.ts` and `fleet_page_splits.ts`; no
 * build step, no framework) that polls `GET /fleet` every 2 s. It shows how
 * far the job is and when it should finish (progress by weight, the rate
 * and ETA from the completion times in the split records), the members
 * (what each does, last seen, splits per minute), the splits (running
 * first, with the fraction done where the source estimates it and how long
 * the current tenancy has lasted; searchable and filtered by state), one
 * split in detail (its tenancies and failures), the quarantined splits and
 * the recently completed ones, with requeue, cancel, drain, and pause and
 * resume of the whole job behind a confirmation. Once the job is done the page leads with its result
 * (records, retries, failures, cuts, how long it took and the rate over that
 * time), and a job that was rerun lists its earlier runs. The operator types the bearer token into the page when the routes
 * take one and there is something to act on; it lives in the script's
 * memory only (never in the HTML, a cookie or storage) and goes out only in
 * the `Authorization` header of an action. Every value from the store is
 * set as text, never as markup.
 *
 * @module
 */
export { FLEET_PAGE_STYLE } from "./fleet_page_style.ts";

/** The favicon (`GET /favicon.ico` and `/favicon.svg`): three lanes, two done. */
export const FLEET_FAVICON_SVG: string = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">
<rect width="32" height="32" rx="6" fill="#1d2330"/>
<rect x="5" y="7" width="22" height="4" rx="2" fill="#2f8f4e"/>
<rect x="5" y="14" width="22" height="4" rx="2" fill="#2f8f4e"/>
<rect x="5" y="21" width="13" height="4" rx="2" fill="#3b7dd8"/>
</svg>
`;

/** The page (static: everything live comes from `/fleet`). */
export const FLEET_PAGE_HTML: string = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>splitlease fleet</title>
<link rel="icon" href="{{base}}/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="{{base}}/fleet.css">
<script src="{{base}}/fleet.js" data-base="{{base}}" defer></script>
</head>
<body>
<h1><img src="{{base}}/favicon.svg" alt=""> splitlease fleet <span id="job" class="mono"></span></h1>
<div id="meta" class="muted">loading…</div>
<div id="banner" role="alert"></div>
<section id="gone" hidden><p id="gone-text" class="big"></p></section>
<section id="result" class="result" hidden aria-labelledby="result-title">
  <h2 id="result-title">Result</h2>
  <dl id="result-list"></dl>
</section>
<section id="runs" hidden aria-labelledby="runs-title">
  <h2 id="runs-title">Earlier runs <span class="muted">(this job was rerun: each run's outcome and what it did)</span></h2>
  <div class="scroll"><table id="runs-table"><thead><tr><th>run</th><th>outcome</th><th>planned</th><th>records</th><th>failures</th>
  <th>took</th><th>finished</th></tr></thead><tbody></tbody></table></div>
</section>
<section class="job" aria-label="job progress">
  <div id="paused" class="paused" role="status" hidden></div>
  <div class="big" id="progress-text">–</div>
  <div class="bar" id="progress"><span class="partial" id="progress-partial"></span><span id="progress-done"></span></div>
  <div id="eta" class="big"></div>
  <div id="rate" class="muted"></div>
  <div id="job-actions"></div>
</section>
<div class="cards">
  <div class="card">splits<b id="count-total">–</b></div>
  <div class="card">completed<b id="count-completed" class="ok">–</b></div>
  <div class="card">owned<b id="count-owned">–</b></div>
  <div class="card">unclaimed<b id="count-unclaimed">–</b></div>
  <div class="card">quarantined<b id="count-quarantined">–</b></div>
  <div class="card">cancelled<b id="count-cancelled" class="muted">–</b></div>
  <div class="card">unreadable<b id="count-invalid" class="muted">–</b></div>
</div>
<h2>Completions <span class="muted" id="spark-caption"></span></h2>
<svg id="spark" viewBox="0 0 600 60" preserveAspectRatio="none" aria-label="splits completed per bucket, oldest left"></svg>
<div class="axis muted"><span id="spark-from"></span><span id="spark-mid"></span><span>now</span></div>
<h2>Members <span id="liveness" class="muted"></span></h2>
<div class="scroll"><table id="members"><thead><tr><th>instance</th><th class="wide">runtime</th><th class="wide">version</th><th>splits</th>
<th>state</th><th>last seen</th><th>splits/min</th><th></th></tr></thead><tbody></tbody></table></div>
<div id="members-also" class="muted"></div>
<section id="operator" hidden>
<h2>Operator token <span class="muted">(for requeue, cancel and drain)</span></h2>
<form id="token-form"><input id="token" type="password" autocomplete="off" placeholder="bearer token (drainToken)" size="24">
<button type="submit">Use token</button> <span id="token-state" class="muted">no token: actions are refused</span></form>
</section>
<div id="operator-note" class="muted"></div>
<div id="notice" aria-live="polite"></div>
<h2>Quarantined <button id="requeue-all" type="button">Requeue all</button></h2>
<div class="scroll"><table id="quarantined"><thead><tr><th>split</th><th>attempts</th><th class="wide">epoch</th><th class="wide">descriptor</th>
<th>failures</th><th></th></tr></thead><tbody></tbody></table></div>
<div id="quarantined-more" class="muted"></div>
<section id="detail" hidden aria-live="polite"></section>
<h2>Splits</h2>
<form class="filters" id="filters">
  <input id="search" type="search" placeholder="search split id, owner or descriptor" aria-label="search splits">
  <select id="filter" aria-label="which splits">
    <option value="runnable">runnable: owned first</option>
    <option value="owned">owned</option>
    <option value="unclaimed">unclaimed</option>
    <option value="quarantined">quarantined</option>
    <option value="completed">completed</option>
    <option value="cancelled">cancelled</option>
    <option value="all">all</option>
  </select>
  <span id="splits-more" class="muted"></span>
</form>
<div class="scroll"><table id="splits"><thead><tr><th>split</th><th>state</th><th>owner</th><th>done</th><th>held for</th>
<th class="wide">epoch</th><th class="wide">attempts</th><th class="wide">descriptor</th></tr></thead><tbody></tbody></table></div>
<h2>Recently completed</h2>
<div class="scroll"><table id="recent"><thead><tr><th>split</th><th>completed</th><th>by</th><th>took</th><th class="wide">epoch</th>
<th class="wide">attempts</th></tr></thead><tbody></tbody></table></div>
<div id="recent-more" class="muted"></div>
<dialog id="confirm" aria-labelledby="confirm-text"><p id="confirm-text"></p>
<div class="buttons"><button type="button" id="confirm-no">Keep it</button><button type="button" id="confirm-yes" class="danger">Confirm</button></div></dialog>
</body>
</html>
`;

/**
 * The page for a request at `path`: its links and the script's requests go
 * to the routes beside it, so the page works where the app is mounted
 * (`/`, or a prefix such as `/ops` in the user's own Hono app).
 *
 * @example
 * ```ts
 * import { renderFleetPage } from "./fleet_page.ts";
 * renderFleetPage("/ops").includes('src="/ops/fleet.js"'); // true
 * ```
 */
export function renderFleetPage(path: string): string {
  const base = path.replace(/\/+$/, "").replace(/[&"<>']/g, (ch) => `&#${ch.charCodeAt(0)};`);
  return FLEET_PAGE_HTML.replaceAll("{{base}}", base);
}
