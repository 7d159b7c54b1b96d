/**
 * Shared bits of the benchmarks: percentiles, a JSON result line that
 * `npm run bench` (scripts/bench.mjs) collects into its summary table, and
 * coordinators over their own NatsStore connections.
 *
 * @module
 */
import { natsTransport } from "./_transport.ts";
import { SplitCoordinator } from "../mod.ts";
import type { CoordinationEvent, Planner } from "../mod.ts";
import type { CoordinatorTunables } from "../host.ts";
import { NatsStore } from "../nats.ts";

/** The `p`-th percentile (0..100) of `xs` (nearest rank). */
export function percentile(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

/** The median of `xs`. */
export const median = (xs: readonly number[]): number => percentile(xs, 50);

/**
 * Reports one summary row: `::result {...}` on stdout. `ratio` is the
 * headline ratio measured in this run; `target` says what it is held to.
 */
export function result(row: { bench: string; metric: string; value: string; ratio?: number; target?: string }): void {
  console.log(`::result ${JSON.stringify(row)}`);
}

/** A coordinator with its own NatsStore connection. */
export interface NatsWorker {
  store: NatsStore;
  c: SplitCoordinator;
}

/** Joins `job` over a fresh connection. */
export async function natsWorker(
  url: string,
  job: string,
  options: CoordinatorTunables & { instance?: string; planner?: Planner; fingerprint?: string } = {},
): Promise<NatsWorker> {
  const store = await NatsStore.connect({ servers: url, job, opTimeoutMs: options.opTimeoutMs ?? 1000, ...(await natsTransport()) });
  const c = await SplitCoordinator.join({ store, job, fingerprint: options.fingerprint ?? job, ...options });
  return { store, c };
}

/** Leaves gracefully and closes the connection. */
export async function closeWorker(w: NatsWorker): Promise<void> {
  await w.c.close().catch(() => {});
  await w.store.close().catch(() => {});
}

/** Stops as if crashed (no release, no leave) and closes the connection. */
export async function crashWorker(w: NatsWorker): Promise<void> {
  await w.c.abandon();
  await w.store.close().catch(() => {});
}

/** The next event of `c` matching `pred` (other events are dropped), or an error after `ms`. */
export async function nextEvent<T extends CoordinationEvent["type"]>(
  c: SplitCoordinator,
  type: T,
  ms = 30_000,
  pred: (e: Extract<CoordinationEvent, { type: T }>) => boolean = () => true,
): Promise<Extract<CoordinationEvent, { type: T }>> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, rej) => (timer = setTimeout(() => rej(new Error(`no ${type} in ${ms} ms`)), ms)));
  try {
    for (;;) {
      const e = await Promise.race([c.poll(), timeout]);
      if (e === undefined) throw new Error(`coordinator stopped before ${type}`);
      if (e.type === type && pred(e as Extract<CoordinationEvent, { type: T }>)) {
        return e as Extract<CoordinationEvent, { type: T }>;
      }
    }
  } finally {
    clearTimeout(timer);
  }
}

/** A final plan of `n` unit splits `s0..s{n-1}`. */
export function unitPlan(n: number, prefix = "s"): Planner {
  return () =>
    Promise.resolve({
      finality: "final" as const,
      splits: Array.from({ length: n }, (_, i) => ({ id: `${prefix}${i}`, descriptor: i })),
    });
}

/** Resolves after `ms`. */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Sum of the write counters of a coordinator (every outcome). */
export function writes(c: SplitCoordinator): number {
  return Object.values(c.stats().writes).reduce((a, b) => a + b, 0);
}
