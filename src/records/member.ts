/**
 * The `member.<instance>` record: one live worker's heartbeat.
 *
 * @module
 */
import * as z from "zod";
import { count, id, v2 } from "./layout.ts";

/**
 * A `member.<instance>` record: one live worker and its heartbeat counter.
 *
 * @example
 * ```ts
 * import type { MemberRecord } from "@splitlease/splitlease/admin";
 * const m: MemberRecord = { v: 2, session: "s1", maxInFlight: 8, runtime: "deno", version: "0.2.0", beat: 0 };
 * ```
 */
export interface MemberRecord {
  /** Record layout. */
  v: 2;
  /** Process session nonce (fresh per process). */
  session: string;
  /** Lanes this worker runs at most (0: a standby that holds nothing). */
  maxInFlight: number;
  /** Runtime name and version, e.g. `deno 2.9.6`. */
  runtime: string;
  /** splitlease version. */
  version: string;
  /** Heartbeat counter, bumped every beat. */
  beat: number;
  /** Set while the worker drains to leave; it gets nothing more. */
  draining?: boolean;
  /** Whether it runs a planner (preferred as leader). */
  planner?: boolean;
  /** Splits it held (or was claiming) when it wrote this beat: the leader re-sends grants when it sees more. */
  held?: number;
  /**
   * Revision of the newest `assign.<instance>` record it has applied: every
   * grant listed there is known to it, so the leader stops listing them.
   */
  seen?: number;
  /**
   * The session whose record this one took over at join (a crash restart or
   * a twin): that session ended without leaving, so the splits it still
   * names are charged an attempt when taken over. Absent when the record was
   * created fresh (the previous session, if any, left cleanly).
   */
  took?: string;
  /** Wall clock of the member when it wrote this beat (ms since the epoch; informational: "last seen"). Absent in older records. */
  at?: number;
  /**
   * Its lease (`leaseMs`): views that cannot watch its revision (any member
   * but the leader, the CLI) judge it past its lease when `at` is this old
   * by their clock. Absent in older records.
   */
  lease?: number;
  /** Its source can cut a running split's remaining work (the leader may ask it to). */
  splittable?: true;
  /**
   * The last estimate of work left its running splits committed, at this
   * beat: `[split, left, total]` each (see `SplitEstimate`; at most one
   * entry per lane, only for splits whose source estimates). Progress
   * commits go to records no leader watches, so this is how the leader's
   * cut ranking learns how far they are (docs/DESIGN.md, "Stragglers").
   */
  est?: [string, number, number][];
  /**
   * Of a sharded job's member: lanes of its `maxInFlight` busy in the job's
   * other shards at this beat. This shard's leader deals it `maxInFlight -
   * away` lanes (docs/DESIGN.md, "Sharded jobs"); absent: none.
   */
  away?: number;
}

/** Schema of a `member.<instance>` record. */
export const MemberRecordSchema: z.ZodType<MemberRecord> = z.object({
  v: v2,
  session: z.string().min(1),
  maxInFlight: count,
  runtime: z.string(),
  version: z.string(),
  beat: count,
  draining: z.boolean().optional(),
  planner: z.boolean().optional(),
  held: count.optional(),
  seen: count.optional(),
  took: z.string().min(1).optional(),
  at: z.number().finite().optional(),
  lease: z.number().int().min(1).optional(),
  splittable: z.literal(true).optional(),
  est: z.array(z.tuple([id, z.number().nonnegative().finite(), z.number().positive().finite()])).optional(),
  away: count.optional(),
});
