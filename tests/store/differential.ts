/**
 * Differential test: seeded random operation sequences applied to
 * MemoryStore and a real backend give identical results, revisions
 * included, and identical watch event streams. Replay a failure with
 * SEED=<n>. Registered for every backend by `backendSuites` (backend_suites.ts).
 */
import assert from "node:assert/strict";
import { MemoryStore, type Store, type WatchEvent } from "../../store.ts";
import { take } from "./conformance.ts";
import { mulberry } from "../coordinator/fleet.ts";

const KEYS = ["plan", "leader", "split.a", "split.b", "split.c", "member.x", "member.y"];
const FILTERS = ["", "split.", "member.", "plan", "nothing."];

type Op =
  | { op: "create"; key: string; value: string }
  | { op: "update"; key: string; value: string; rev: number }
  | { op: "delete"; key: string; rev?: number }
  | { op: "get"; key: string }
  | { op: "list"; filter: string };

function genOps(seed: number, n: number): Op[] {
  const r = mulberry(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)];
  const ops: Op[] = [];
  let maxRev = 0;
  for (let i = 0; i < n; i++) {
    const key = pick(KEYS);
    const x = r();
    // Revisions near the current one, so CAS both wins and loses.
    const rev = Math.max(1, maxRev - Math.floor(r() * 4));
    if (x < 0.3) ops.push({ op: "create", key, value: `c${i}` });
    else if (x < 0.55) ops.push({ op: "update", key, value: `u${i}`, rev });
    else if (x < 0.7) ops.push({ op: "delete", key, rev: r() < 0.5 ? undefined : rev });
    else if (x < 0.9) ops.push({ op: "get", key });
    else ops.push({ op: "list", filter: pick(FILTERS) });
    maxRev += 1;
  }
  return ops;
}

async function apply(s: Store, op: Op): Promise<unknown> {
  switch (op.op) {
    case "create":
      return await s.create(op.key, op.value);
    case "update":
      return await s.update(op.key, op.value, op.rev);
    case "delete":
      return await s.delete(op.key, op.rev);
    case "get":
      return await s.get(op.key);
    case "list":
      return await s.list(op.filter);
  }
}

async function untilReady(it: AsyncIterator<WatchEvent>, ms = 10_000): Promise<WatchEvent[]> {
  const out: WatchEvent[] = [];
  const deadline = Date.now() + ms;
  while (out.at(-1)?.type !== "ready") out.push(...(await take(it, 1, deadline - Date.now())));
  return out;
}

/** Drains a watch until quiet for a moment (everything already delivered). */
async function drain(it: AsyncIterator<WatchEvent>): Promise<WatchEvent[]> {
  const out: WatchEvent[] = [];
  while (true) {
    try {
      out.push(...(await take(it, 1, 300)));
    } catch {
      return out;
    }
  }
}

/**
 * Registers the differential test of one backend: `open(i)` opens a fresh,
 * empty store for run `i` (revisions from 0) and resolves once `setup`
 * (the backend's server, if any) is ready.
 */
export function differential(name: string, open: (i: number) => Promise<Store>, cleanup: () => Promise<void> = () => Promise.resolve()): void {
  Deno.test({
    name: `differential: MemoryStore and ${name} agree on random operation sequences`,
    sanitizeOps: false,
    sanitizeResources: false,
    fn: async () => {
      try {
        const fixed = Deno.env.get("SEED");
        const seeds = fixed ? [Number(fixed)] : Array.from({ length: 6 }, () => Math.floor(Math.random() * 2 ** 31));
        for (const [i, seed] of seeds.entries()) {
          const mem = new MemoryStore();
          const other = await open(i);
          try {
            await compare(seed, mem, other);
          } catch (e) {
            console.error(`differential test failed with seed ${seed}; replay with SEED=${seed}`);
            throw e;
          } finally {
            await mem.close();
            await other.close();
          }
        }
      } finally {
        await cleanup();
      }
    },
  });
}

async function compare(seed: number, mem: Store, other: Store): Promise<void> {
  const ops = genOps(seed, 150);
  // A watch opened midway must also see the same events.
  let watches: { mem: AsyncIterator<WatchEvent>; other: AsyncIterator<WatchEvent> } | undefined;
  let snapshot: WatchEvent[] = [];
  const filter = FILTERS[seed % 3];
  for (const [j, op] of ops.entries()) {
    if (j === 50) {
      watches = {
        mem: mem.watch(filter)[Symbol.asyncIterator](),
        other: other.watch(filter)[Symbol.asyncIterator](),
      };
      // A real store opens a watch asynchronously: compare snapshots once both are ready.
      const [sm, sn] = [await untilReady(watches.mem), await untilReady(watches.other)];
      assert.deepEqual(sn, sm, `seed ${seed} (replay with SEED=${seed}): watch snapshots differ`);
      snapshot = sm;
    }
    const [a, b] = await Promise.all([apply(mem, op), apply(other, op)]);
    assert.deepEqual(b, a, `seed ${seed} (replay with SEED=${seed}), op #${j} ${JSON.stringify(op)}`);
  }
  const [wm, wn] = [await drain(watches!.mem), await drain(watches!.other)];
  assert.deepEqual(wn, wm, `seed ${seed} (replay with SEED=${seed}): watch events differ`);
  assert.ok(snapshot.at(-1)?.type === "ready");
  assert.deepEqual(await other.list(""), await mem.list(""), `seed ${seed}: final state differs`);
}
