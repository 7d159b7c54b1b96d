// One vocabulary for split states (issue 21, item 6): the CLI's `status`
// said "running" and "waiting" while `splits --state` accepted only
// runnable, completed, quarantined and cancelled, `/fleet` counted `unowned`
// and `/status` and the metrics `unclaimed`. Now every word the CLI, the
// fleet page, `/status`, `/fleet` and the metrics use for a state is one of
// FLEET_STATES and filters with `--state` and `/fleet?state=`; the old words
// are aliases.
import assert from "node:assert/strict";
import { parseArgs } from "../../src/cli/args.ts";
import { formatStatus } from "../../src/cli/format.ts";
import { buildFleetView, FLEET_STATES } from "../../src/fleet/fleet_view.ts";
import type { FleetState, SplitRecord } from "../../admin.ts";
import type { FleetSnapshot } from "../../src/fleet/types.ts";
import { seedRecord } from "../../src/records/transitions.ts";
import { FLEET_PAGE_HTML } from "../../src/http/fleet_page.ts";
import { createApp } from "../../host.ts";
import { ScriptedCoordinator } from "../helpers/scripted_coordinator.ts";

const entry = (key: string, value: unknown) => ({ key, value: JSON.stringify(value), revision: 1 });
const a = { instance: "a", session: "sa" };

function snapshot(): FleetSnapshot {
  const splits: [string, SplitRecord][] = [
    ["s1", { ...seedRecord(1, { n: 1 }), owner: a, epoch: 1 }],
    ["s2", seedRecord(1, { n: 2 })],
    ["s3", seedRecord(1, { n: 3 })],
    ["s4", { ...seedRecord(1, { n: 4 }), status: "completed" }],
  ];
  return {
    job: entry("job", { v: 3, fingerprint: "fp", createdAt: 0 }),
    plan: entry("plan", { v: 2, term: 1, finality: "final", generation: 1, planned: splits.length }),
    leader: entry("leader", { v: 2, instance: "a", session: "sa", term: 1, beat: 1 }),
    members: [entry("member.a", { v: 2, session: "sa", maxInFlight: 4, runtime: "deno", version: "0.2.0", beat: 1 })],
    splits: splits.map(([id, r]) => entry(`split.${id}`, r)),
    at: 0,
  };
}

const stateOf = (word: string) => {
  const { command } = parseArgs(["splits", "--state", word, "--job", "j", "--servers", "ws://x:1"], {});
  return command.name === "splits" ? command.state : undefined;
};
const ids = (state: FleetState[]) => buildFleetView(snapshot(), { state }).splits.map((s) => s.id);

Deno.test("states: every count word of the CLI's status filters with splits --state, and selects what it counted", () => {
  const view = buildFleetView(snapshot());
  const line = formatStatus("j", view).split("\n").find((l) => l.startsWith("splits "))!;
  const words = [...line.matchAll(/(\d+) ([a-z]+)/g)].map((m) => ({ n: Number(m[1]), word: m[2] }));
  assert.deepEqual(words.map((w) => w.word).sort(), [...FLEET_STATES].sort(), line);
  for (const { n, word } of words) {
    const state = stateOf(word);
    assert.deepEqual(state, [word], `--state ${word}`);
    assert.equal(ids(state!).length, n, `${word}: ${n} in status, as many listed`);
    assert.equal(view.counts[word as keyof typeof view.counts], n, `/fleet counts.${word}`);
  }
  assert.deepEqual(ids(["unclaimed"]), ["s2", "s3"]);
  assert.deepEqual(ids(["owned"]), ["s1"]);
});

Deno.test("states: the old words are aliases (running = owned, waiting = unowned = unclaimed)", () => {
  assert.deepEqual(stateOf("running"), ["owned"]);
  assert.deepEqual(stateOf("waiting"), ["unclaimed"]);
  assert.deepEqual(buildFleetView(snapshot(), { state: ["waiting" as FleetState] }).page.state, ["unclaimed"]);
  assert.throws(() => stateOf("sleeping"), /unknown state "sleeping"; states: runnable, owned, unclaimed/);
  assert.equal(buildFleetView(snapshot()).counts.unowned, 2, "the deprecated /fleet field stays");
});

Deno.test("states: the fleet page, /status and the metrics use the same words", async () => {
  const cards = [...FLEET_PAGE_HTML.matchAll(/<div class="card">([a-z]+)<b id="count-([a-z]+)">/g)];
  for (const [, label, key] of cards) {
    if (key === "total" || key === "invalid") continue;
    assert.equal(label, key, `the page's card ${key} is labelled ${label}`);
    assert.ok(FLEET_STATES.includes(key as FleetState), `card ${key}`);
  }
  assert.ok(cards.some(([, , k]) => k === "unclaimed") && cards.some(([, , k]) => k === "owned"));
  const coordinator = new ScriptedCoordinator();
  const app = createApp({ coordinator });
  const status = await (await app.fetch(new Request("http://x/status"))).json();
  const counts = status.counts ?? status.coordinator?.counts;
  assert.ok(counts, JSON.stringify(status).slice(0, 300));
  for (const k of Object.keys(counts)) {
    if (k === "planned") continue;
    assert.ok(FLEET_STATES.includes(k as FleetState), `/status counts.${k}`);
  }
  const metrics = await (await app.fetch(new Request("http://x/metrics"))).text();
  for (const m of metrics.matchAll(/^# TYPE etl_coordination_splits_([a-z_]+) gauge$/gm)) {
    if (["planned", "owned", "owned_weight", "draining"].includes(m[1])) continue; // this instance's, or the plan's
    assert.ok(FLEET_STATES.includes(m[1] as FleetState), `metric splits_${m[1]}`);
  }
});
