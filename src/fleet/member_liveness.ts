/**
 * How a view of the fleet (`/fleet`, the page, `splitlease status`, `jobs`
 * and `delete`) judges a member (docs/DESIGN.md, "Liveness: judged by the
 * leader", and OPERATIONS, "Watching a fleet"), by the leader's rule: a
 * member whose heartbeat has not moved for its lease is dead.
 *
 * - **Served by the leader**, the view takes the leader's own judgement (its
 *   monotonic clock, the record's revision): the members it counts live are
 *   `alive`, the others are past their lease.
 * - **Anywhere else** (another member, the CLI) the view has no history of
 *   the record's revisions: it compares the newest time the record is known
 *   to have been written — the member's own wall clock at the beat (`at`),
 *   or the server's write time where the backend keeps one (a catalog's
 *   `writtenAt`) — with its own wall clock, and the lease the member names
 *   in its record (`lease`). Watching the revision for a lease instead would
 *   be exact but make `splitlease status` wait a lease, and every page
 *   server keep state; the wall clock costs nothing and errs by the clock
 *   difference between the two hosts (milliseconds under NTP; a member whose
 *   clock runs a lease behind shows dead while it beats).
 *
 * A member past its lease is `unresponsive` while runnable splits still
 * name its session (the leader has not taken them over yet: a
 * `rebalanceDelayMs`, a takeover in flight, or no leader at all), then
 * `gone`. No lease multiple is made here: the lease itself is the rule
 * (its multiples live in `src/coordinator/timings.ts`).
 *
 * @module
 */
import type { MemberRecord } from "../records.ts";

/**
 * How a view judges a member: `alive` (beating within its lease),
 * `unresponsive` (past its lease, runnable splits still name it), `gone`
 * (past its lease, nothing names it) or `unknown` (its record carries no
 * time: written by a version before `at`, on a backend that keeps no write
 * time).
 *
 * @example
 * ```ts
 * import type { MemberLiveness } from "@splitlease/splitlease/admin";
 * const dead = (l: MemberLiveness) => l === "gone" || l === "unresponsive";
 * ```
 */
export type MemberLiveness = "alive" | "unresponsive" | "gone" | "unknown";

/**
 * The lease assumed for a member record that names none (written by a
 * version before records carried their `lease`): two minutes, the margin
 * `splitlease delete` used for every member before (a beat comes every
 * `leaseMs / 3`, so this covers leases up to six minutes).
 *
 * @example
 * ```ts
 * import { LIVE_WITHIN_MS } from "@splitlease/splitlease/admin";
 * console.log(LIVE_WITHIN_MS); // 120000
 * ```
 */
export const LIVE_WITHIN_MS = 120_000;

/**
 * The newest time a member is known to have beaten (ms since the epoch):
 * its own clock at the beat (`at`) or the server's write time, whichever is
 * later; `null` when neither is known.
 *
 * @example
 * ```ts
 * import { lastSeenAt } from "./member_liveness.ts";
 * lastSeenAt({ v: 2, session: "s", maxInFlight: 1, runtime: "deno", version: "0.2.0", beat: 3, at: 1000 }, 1200); // 1200
 * ```
 */
export function lastSeenAt(record: MemberRecord | undefined, writtenAt?: number): number | null {
  const times = [record?.at, writtenAt].filter((t): t is number => typeof t === "number");
  return times.length ? Math.max(...times) : null;
}

/**
 * The lease a member is judged by: the one its record names, else
 * {@linkcode LIVE_WITHIN_MS}.
 *
 * @example
 * ```ts
 * import { leaseOf } from "./member_liveness.ts";
 * leaseOf({ v: 2, session: "s", maxInFlight: 1, runtime: "deno", version: "0.2.0", beat: 3, lease: 15000 }); // 15000
 * ```
 */
export function leaseOf(record: MemberRecord | undefined): number {
  return record?.lease ?? LIVE_WITHIN_MS;
}

/**
 * Whether a member is past its lease at wall-clock time `now`, judged from
 * its record's times (`null`: it carries none).
 *
 * @example
 * ```ts
 * import { pastLease } from "./member_liveness.ts";
 * const m = { v: 2 as const, session: "s", maxInFlight: 1, runtime: "deno", version: "0.2.0", beat: 3, at: 0, lease: 15000 };
 * console.log(pastLease(m, undefined, 14_999), pastLease(m, undefined, 15_000)); // false true
 * ```
 */
export function pastLease(record: MemberRecord | undefined, writtenAt: number | undefined, now: number): boolean | null {
  const seen = lastSeenAt(record, writtenAt);
  return seen === null ? null : now - seen >= leaseOf(record);
}

/**
 * What a view knows of one member, for {@linkcode judgeMember}.
 *
 * @example
 * ```ts
 * import type { MemberSighting } from "./member_liveness.ts";
 * const s: MemberSighting = { record: undefined, now: Date.now(), owned: 0 };
 * ```
 */
export interface MemberSighting {
  /** Its record. */
  record: MemberRecord | undefined;
  /** When the server stored the record, where the backend says. */
  writtenAt?: number;
  /** The view's wall clock. */
  now: number;
  /** Runnable splits whose records name its session. */
  owned: number;
  /** The leader's judgement, when the view is built on the leader: `true` if it counts the member live. */
  leader?: boolean;
}

/**
 * Judges one member (see the module doc): by the leader's verdict when the
 * view has one, else by its lease against the view's clock.
 *
 * @example
 * ```ts
 * import { judgeMember } from "./member_liveness.ts";
 * const record = { v: 2 as const, session: "s", maxInFlight: 8, runtime: "bun", version: "0.2.0", beat: 9, at: 0, lease: 15000 };
 * judgeMember({ record, now: 20_000, owned: 2 }); // "unresponsive": its splits are not taken over yet
 * judgeMember({ record, now: 20_000, owned: 0 }); // "gone"
 * judgeMember({ record, now: 20_000, owned: 0, leader: true }); // "alive": the leader says so
 * ```
 */
export function judgeMember(s: MemberSighting): MemberLiveness {
  const past = s.leader === undefined ? pastLease(s.record, s.writtenAt, s.now) : !s.leader;
  if (past === null) return "unknown";
  if (!past) return "alive";
  return s.owned > 0 ? "unresponsive" : "gone";
}
