/**
 * Every suite a store backend must pass, registered by one call: a
 * backend's test folder has one `backend_test.ts` that builds its
 * {@linkcode BackendHarness} and calls {@linkcode backendSuites} (see
 * docs/WRITING_A_BACKEND.md). The suites:
 *
 * - conformance (`conformance.ts`): the six primitives, revisions included;
 * - differential (`differential.ts`): seeded operation sequences against MemoryStore;
 * - the coordinator scenarios (`tests/coordinator/*.ts`: safety, scenarios,
 *   hardening I–III, the leader's cost, balancing, assignment, the job's lifecycle) on real time;
 * - outages (`outage.ts`) through the harness's fault servers: paused,
 *   stopped and restarted, connections killed;
 * - bad input: values planted past splitlease are handed back untouched and
 *   decode to `InvalidRecordError` naming the key.
 *
 * Test names start with the backend's id (`redis: ...` for the scenarios,
 * `redis store: ...`, `outage redis: ...`), so `--filter` picks one suite;
 * `KIT_SUITES=conformance,outages` registers only those.
 *
 * @module
 */
import assert from "node:assert/strict";
import { InvalidRecordError } from "../../admin.ts";
import type { Store } from "../../store.ts";
import { decodeRecord, schemaForKey } from "../../src/records.ts";
import { assignmentScenarios } from "../coordinator/assignment.ts";
import { balancingScenarios } from "../coordinator/balancing.ts";
import type { Backend } from "../coordinator/fleet.ts";
import { hardeningScenarios } from "../coordinator/hardening.ts";
import { lifecycleScenarios } from "../coordinator/lifecycle.ts";
import { shardedScenarios } from "../coordinator/sharded.ts";
import { RealDriver } from "../coordinator/fleet.ts";
import { REAL_TIMINGS } from "../coordinator/real_backend.ts";
import { shardJob } from "../../admin.ts";
import { hardeningIIScenarios } from "../coordinator/hardening_ii.ts";
import { hardeningIIIScenarios, leaderCostScenarios } from "../coordinator/hardening_iii.ts";
import { safetyScenarios } from "../coordinator/safety.ts";
import { coordinatorScenarios } from "../coordinator/scenarios.ts";
import { conformance, take } from "./conformance.ts";
import { differential } from "./differential.ts";
import { type FaultHarness, outageCases } from "./outage.ts";

/**
 * What a backend's tests supply: how to open a fresh store, a fleet for the
 * coordinator scenarios, a server of the test's own to fault, and how to
 * plant a value past splitlease.
 */
export interface BackendHarness {
  /** The backend's registry id (`src/store/store_urls.ts`): names every test. */
  id: string;
  /** Why the backend cannot be tested here (no server to test against), or `undefined`: every suite is then ignored, saying so. */
  missing?: string;
  /** A fresh, empty store of a job of its own (revisions from 0), with `opTimeoutMs` (default 1000). */
  store(opTimeoutMs?: number): Promise<Store>;
  /** The coordinator scenarios' backend (`realBackend` of tests/coordinator/real_backend.ts over this backend's stores). */
  scenarios(): Backend;
  /** The outage suite's fault servers. */
  faults: FaultHarness;
  /**
   * Writes `value` at `key` of `store`'s job as another tool would, past
   * splitlease's own writes (a raw client of the server).
   */
  plant(store: Store, key: string, value: string): Promise<void>;
}

/** Which suites to register (all by default): a backend that runs one elsewhere leaves it out. */
export interface SuiteSelection {
  conformance?: boolean;
  differential?: boolean;
  scenarios?: boolean;
  outages?: boolean;
  badInput?: boolean;
}

const opts = { sanitizeOps: false, sanitizeResources: false };

/** Registers every suite of the kit on `h`'s backend. */
export function backendSuites(h: BackendHarness, only: SuiteSelection = {}): void {
  // KIT_SUITES=conformance,scenarios narrows a run to those suites (the mutation gate's suites do).
  const env = Deno.env.get("KIT_SUITES")?.split(",").map((s) => s.trim()).filter(Boolean);
  if (env?.length) only = Object.fromEntries(env.map((s) => [s, true]));
  const all = Object.keys(only).length === 0;
  const want = (s: keyof SuiteSelection) => all || only[s] === true;
  if (h.missing) {
    console.warn(`${h.id}: ${h.missing}: its backend suites are ignored`);
    Deno.test({ name: `${h.id}: backend suites (${h.missing})`, ignore: true, fn: () => {} });
    return;
  }
  if (want("conformance")) conformance(`${h.id} store`, () => h.store());
  if (want("differential")) differential(h.id, () => h.store(2000));
  if (want("scenarios")) {
    const b = h.scenarios();
    safetyScenarios(b);
    coordinatorScenarios(b);
    hardeningScenarios(b);
    hardeningIIScenarios(b);
    hardeningIIIScenarios(b);
    leaderCostScenarios(b);
    balancingScenarios(b);
    assignmentScenarios(b);
    lifecycleScenarios(b);
    const connect = b.connect;
    if (connect) {
      shardedScenarios({ name: b.name, time: () => new RealDriver(), timings: REAL_TIMINGS, store: (job, index) => connect(shardJob(job, index)) });
    }
  }
  if (want("outages")) outageCases(h.faults);
  if (want("badInput")) badInput(h);
}

function decode(key: string, value: string): unknown {
  return decodeRecord(key, value, schemaForKey(key)!);
}

/**
 * A value planted by hand (another tool, a bug, an operator) that is not a
 * valid record: the store hands the string back untouched, and decoding it
 * with the record schema for its key reports InvalidRecordError naming the
 * key, for point reads, listings and watches alike.
 */
function badInput(h: BackendHarness): void {
  Deno.test({
    name: `${h.id} bad input: non-JSON and wrong-shape values planted by hand are InvalidRecordError naming the key`,
    ...opts,
    fn: async () => {
      await using store = await h.store();
      await h.plant(store, "split.garbage", "{not json");
      await h.plant(store, "plan", JSON.stringify({ v: 2, term: "three" }));

      const g = await store.get("split.garbage");
      assert.equal(g?.value, "{not json");
      assert.throws(() => decode("split.garbage", g!.value), (e) =>
        e instanceof InvalidRecordError && e.key === "split.garbage" && e.code === "INVALID_RECORD" &&
        e.issues.length === 0 && /not JSON/.test(e.message));

      const [plan] = await store.list("plan");
      assert.throws(() => decode(plan.key, plan.value), (e) =>
        e instanceof InvalidRecordError && e.key === "plan" &&
        e.issues.some((i) => i.path.join(".") === "term") && /Invalid record at key "plan"/.test(e.message));

      const w = store.watch("split.");
      const [ev] = await take(w[Symbol.asyncIterator](), 1);
      assert.ok(ev.type === "put");
      assert.throws(() => decode(ev.key, ev.value), (e) => e instanceof InvalidRecordError && e.key === "split.garbage");
      await w.stop();
    },
  });
}
