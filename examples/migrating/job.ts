/**
 * The job that docs/MIGRATING.md moves from BullMQ and from a JetStream work
 * queue to splitlease, shared by the three versions (`bullmq.ts`,
 * `jetstream.ts`, `splitlease.ts`): copy the rows with ids [0, total) from a
 * source table to a sink, in ranges of `size` ids, `BATCH` rows at a time.
 * `readRows` stands in for the database query and `MemorySink` for the
 * target; the sink is an idempotent upsert, as any at-least-once consumer's
 * must be (a redelivered job or a replayed tail writes the same rows again).
 *
 * @module
 */

/**
 * One range of ids, `[from, to)`: a BullMQ job's data, a work-queue
 * message, a splitlease split's descriptor. (A `type`, not an `interface`:
 * a descriptor must be JSON, and TypeScript checks an interface against
 * JSON's index signature only when it has one.)
 */
export type Range = { from: number; to: number };

/** One row of the source table. */
export interface Row {
  id: number;
  value: number;
}

/** Rows read and written per batch. */
export const BATCH = 100;

/** The plan: `[0, total)` cut into ranges of `size` ids, in id order. */
export function ranges(total: number, size: number): Range[] {
  const out: Range[] = [];
  for (let from = 0; from < total; from += size) out.push({ from, to: Math.min(total, from + size) });
  return out;
}

/** The source: the rows with ids in `[from, to)` (a `select … where id >= $1 and id < $2` in real life). */
export async function readRows(from: number, to: number): Promise<Row[]> {
  await new Promise((r) => setTimeout(r, 1)); // a round trip to the database
  return Array.from({ length: Math.max(0, to - from) }, (_, i) => ({ id: from + i, value: ((from + i) * 7919) % 1000 }));
}

/** Where the rows go: an idempotent upsert by id. */
export interface Sink {
  upsert(rows: readonly Row[]): Promise<void>;
}

/** A sink in memory: rows by id, and how many writes it took (replays show as writes > rows). */
export class MemorySink implements Sink {
  readonly rows: Map<number, number> = new Map();
  writes = 0;

  upsert(rows: readonly Row[]): Promise<void> {
    for (const r of rows) this.rows.set(r.id, r.value);
    this.writes += rows.length;
    return Promise.resolve();
  }
}
