// Minimal reproductions of coordinator bugs the simulation found (each names
// the seed that found it; replay with SIM_SEED=<seed>).
import assert from "node:assert/strict";
import { StoreUnavailableError } from "../../src/errors.ts";
import { MemoryStore } from "../../src/store/memory_store.ts";
import type { Store, WriteResult } from "../../src/store/store.ts";
import { Fleet, finalPlanner, splits } from "../coordinator/fleet.ts";

/**
 * A store whose matching writes throw StoreUnavailableError, either after
 * landing (`landed`: a timeout on the reply) or without applying.
 */
class Flaky extends MemoryStore {
  constructor(readonly match: (op: string, key: string) => boolean, readonly landed: boolean, public budget = 1) {
    super();
  }
  #hit(op: string, key: string): boolean {
    if (this.budget > 0 && this.match(op, key)) {
      this.budget--;
      return true;
    }
    return false;
  }
  override async create(key: string, value: string): Promise<WriteResult> {
    const hit = this.#hit("create", key);
    if (hit && !this.landed) throw new StoreUnavailableError("create", 200, { detail: "not applied" });
    const r = await super.create(key, value);
    if (hit) throw new StoreUnavailableError("create", 200, { detail: "landed, reply lost" });
    return r;
  }
  override async update(key: string, value: string, revision: number): Promise<WriteResult> {
    const hit = this.#hit("update", key);
    if (hit && !this.landed) throw new StoreUnavailableError("update", 200, { detail: "not applied" });
    const r = await super.update(key, value, revision);
    if (hit) throw new StoreUnavailableError("update", 200, { detail: "landed, reply lost" });
    return r;
  }
}

async function planIsPublished(store: Store, which: "create" | "update", key: string): Promise<void> {
  await using f = new Fleet(store);
  const [a, b] = await f.joinAll([
    { instance: "a", planner: finalPlanner(splits(2)) },
    { instance: "b", planner: finalPlanner(splits(2)) },
  ]);
  const published = await f.until(() => (a.c.status().plan?.generation ?? 0) > 0, 5 * 1000);
  assert.ok(published, `an outage on the new leader's ${which} of "${key}" must not stop planning for good`);
  assert.ok(await f.until(() => {
    for (const w of [a, b]) for (const h of w.c.status().held) void w.c.commit(h.id, h.epoch, {}, { final: true });
    return a.has("allComplete") && b.has("allComplete");
  }, 3000));
}

// Seed 9: the first leader's create of `plan` (the term bump) landed but
// threw; the leader kept `leading = true` with no term, kept beating the
// leader record (so nobody re-elected) and never planned.
Deno.test("regression (sim seed 9): a maybe-landed term bump does not wedge planning", async () => {
  await planIsPublished(new Flaky((op, key) => op === "create" && key === "plan", true), "create", "plan");
});

Deno.test("regression (sim seed 9): a failed term bump does not wedge planning", async () => {
  await planIsPublished(new Flaky((op, key) => op === "create" && key === "plan", false), "create", "plan");
});

Deno.test("regression (sim seed 9): a failed write of the won term to the leader record does not wedge planning", async () => {
  // The winner's first update of `leader` writes its term.
  await planIsPublished(new Flaky((op, key) => op === "update" && key === "leader", false), "update", "leader");
});

