/**
 * The fleet page's styles (`GET /fleet.css`): one sheet, no inline styles
 * (the CSP allows styles from the worker only). Phone-width windows get one
 * column, tables that scroll sideways and fewer columns (`.wide` cells).
 *
 * @module
 */

/** The stylesheet. */
export const FLEET_PAGE_STYLE: string = `
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.2em; color: #1d2330; background: #f6f7f9; }
h1 { font-size: 1.3em; margin: 0 0 .2em; display: flex; align-items: center; gap: .4em; flex-wrap: wrap; }
h1 img { width: 1.2em; height: 1.2em; }
h2 { font-size: 1.05em; margin: 1.4em 0 .4em; display: flex; align-items: baseline; gap: .6em; flex-wrap: wrap; }
.muted { color: #667; } .bad { color: #b00020; } .ok { color: #176c2c; } .warn { color: #8a5a00; }
.cards { display: flex; flex-wrap: wrap; gap: .6em; margin: .8em 0; }
.card { background: #fff; border: 1px solid #dde; border-radius: 6px; padding: .4em .8em; min-width: 6.5em; }
.card b { display: block; font-size: 1.5em; }
.job { background: #fff; border: 1px solid #dde; border-radius: 6px; padding: .7em .9em; margin: .8em 0; }
.job .big { font-size: 1.25em; font-weight: 600; }
.paused { background: #fff3cd; border: 1px solid #e0c36a; border-radius: 4px; padding: .4em .7em; margin-bottom: .5em; font-weight: 600; }
#job-actions { margin-top: .4em; }
.result { background: #eef8f0; border: 1px solid #b9dcc2; border-radius: 6px; padding: .3em .9em .6em; margin: .8em 0; }
.result h2 { margin: .3em 0; }
.result dl { display: grid; grid-template-columns: max-content 1fr; gap: .15em .9em; margin: 0; }
.result dt { color: #556; } .result dd { margin: 0; font-weight: 600; }
.bar { position: relative; height: 1.1em; background: #e4e6ea; border-radius: 3px; overflow: hidden; }
.bar > span { position: absolute; top: 0; bottom: 0; left: 0; background: #2f8f4e; }
.bar > span.partial { background: #9cc9a9; }
.bar.small { height: .8em; min-width: 5em; display: inline-block; width: 7em; vertical-align: middle; }
.bar.small > span { background: #3b7dd8; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; background: #fff; width: 100%; }
th, td { border-bottom: 1px solid #e4e6ea; padding: .3em .5em; text-align: left; vertical-align: top; }
th { background: #eef0f4; font-weight: 600; white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.selected td { background: #fff6d6; }
#detail table td, #recent td { white-space: nowrap; }
code, .mono { font-family: ui-monospace, monospace; font-size: .92em; word-break: break-all; }
button { font: inherit; padding: .15em .6em; cursor: pointer; }
button.link { border: 0; background: none; padding: 0; color: #1f5fbf; text-decoration: underline; font-family: ui-monospace, monospace; font-size: .92em; }
.pill { display: inline-block; padding: 0 .45em; border-radius: 9px; font-size: .85em; background: #e4e6ea; }
.pill.working, .pill.owned { background: #dbe8fb; } .pill.idle, .pill.unclaimed { background: #eee; }
.pill.standby { background: #efe6fa; } .pill.draining { background: #fff0cc; } .pill.dead, .pill.quarantined { background: #fde0e4; }
.pill.completed { background: #dff3e4; } .pill.cancelled { background: #e9e9e9; color: #667; } .pill.permanent { background: #f8c9cf; }
#banner { padding: .4em .7em; border-radius: 4px; margin: .5em 0; display: none; }
#banner.show { display: block; background: #fde8ea; border: 1px solid #e4a0a8; }
#notice { min-height: 1.4em; margin: .4em 0; }
#gone { background: #fff; border: 1px solid #dde; border-radius: 6px; padding: .7em .9em; margin: .8em 0; font-weight: 600; }
#gone[hidden] { display: none; }
body.gone > :not(h1):not(#gone):not(dialog) { display: none; }
ul.failures { margin: 0; padding-left: 1.1em; }
details.stack summary { cursor: pointer; font-family: monospace; font-size: 0.85em; }
details.stack pre { margin: 0.2em 0 0.4em; font-size: 0.85em; white-space: pre-wrap; overflow-wrap: anywhere; }
svg#spark { background: #fff; border: 1px solid #dde; width: 100%; max-width: 600px; height: 60px; display: block; }
.axis { display: flex; justify-content: space-between; max-width: 600px; font-size: .8em; }
.filters { display: flex; flex-wrap: wrap; gap: .5em; align-items: center; margin: .4em 0; }
.filters input[type=search] { min-width: 16em; flex: 1 1 16em; max-width: 28em; font: inherit; padding: .2em .4em; }
select, input { font: inherit; }
#detail { background: #fff; border: 2px solid #c9a227; border-radius: 6px; padding: .6em .9em; margin: .8em 0; }
#detail[hidden] { display: none; }
#detail dl { display: grid; grid-template-columns: max-content 1fr; gap: .15em .8em; margin: .4em 0; }
#detail dt { color: #667; } #detail dd { margin: 0; }
dialog { border: 1px solid #889; border-radius: 6px; max-width: 30em; }
dialog::backdrop { background: rgba(20, 25, 40, .35); }
dialog .buttons { display: flex; gap: .6em; justify-content: flex-end; margin-top: 1em; }
dialog .danger { background: #b00020; color: #fff; border: 1px solid #800018; border-radius: 3px; }
@media (max-width: 700px) {
  body { margin: .6em; font-size: 13px; }
  .wide { display: none; }
  .card { min-width: 4.5em; padding: .3em .5em; }
  .card b { font-size: 1.2em; }
  .filters input[type=search] { min-width: 10em; }
  th, td { padding: .25em .3em; }
  .bar.small { width: 3em; min-width: 3em; }
  #detail dl { grid-template-columns: 1fr; } #detail dd { margin-bottom: .3em; }
  .result dl { grid-template-columns: 1fr; } .result dd { margin-bottom: .3em; }
}
`;
