/**
 * One tenancy of a held split, and what is left of one that ended while
 * the store may still name this worker.
 *
 * @module
 */
import type { Owner, SplitRecord } from "../../records.ts";
import type { Cut } from "../cuts.ts";
import type { ProgHold } from "../prog_records.ts";
import type { TenancyTrace } from "../../tracing/tenancy_trace.ts";
import type { SplitSpec } from "../types.ts";

/**
 * One tenancy of a held split.
 *
 * @example
 * ```ts ignore
 * const t: Tenancy = { epoch: 3, revision: 41, record, spec, draining: false, to: null, prog: { epoch: 3, owner: me, rev: undefined, progress: null, records: 0 } };
 * ```
 */
export interface Tenancy {
  /** Epoch of this tenancy (the fencing token). */
  epoch: number;
  /** Revision of the last record we wrote or saw. */
  revision: number;
  /** That record. */
  record: SplitRecord;
  /** The split's spec. */
  spec: SplitSpec;
  /** Whether a revocation was requested. */
  draining: boolean;
  /** Successor to release to (a steal or a drain with a named successor), or `null`. */
  to: Owner | null;
  /** The revocation started from the leader (a revoke directive), not from our own drain: the leader may withdraw it. */
  byLeader?: boolean;
  /** Drain deadline or no-progress timer. */
  drainTimer?: unknown;
  /** The revocation was withdrawn: only the no-progress rule applies. */
  cancelled?: boolean;
  /**
   * Our own drain's revocation that the leader has not listed yet: its
   * release waits for the leader's answer (a successor, or none) a short
   * while — see `TenancyWrites.release`. Calls the waiting release on.
   */
  unanswered?: () => void;
  /** Whether we wrote to the split at this epoch (a grant is then acknowledged). */
  wrote?: boolean;
  /** Terminal writes of ours in flight (a release): the leader may answer one before its reply reaches us. */
  ending?: number;
  /**
   * A terminal write (final commit, fail) failed other than by a fence and
   * none was made since: its holder gave the split up and nothing runs it.
   * Not counted as held in heartbeats, so the leader's anti-entropy re-grants
   * it, and a re-grant at this epoch resumes it.
   */
  stuck?: boolean;
  /**
   * The cut of its remaining work its source decided, carried by every
   * write of the tenancy until one lands (see cuts.ts), and the residuals
   * seen to exist since (dropped from the record by the next write).
   */
  cut?: { cut: Cut; landed: boolean };
  /** Residuals of its cuts whose records exist. */
  created?: Set<string>;
  /** Its span (tracing on): the cause of its writes' store operations; the lane runs the source inside it. */
  trace?: TenancyTrace;
  /** What it knows of the split's progress record: the position it committed (or started from) and that record's revision. */
  prog: ProgHold;
  /** Progress writes of ours in flight. */
  progWriting?: number;
  /** A progress write whose outcome is unknown (an outage): its end cannot vouch for its last position (see `Settled`). */
  progUnsure?: boolean;
}

/**
 * What a tenancy left behind when it ended without a write of ours (self-fence).
 *
 * @example
 * ```ts ignore
 * const d: Dormant = { epoch: 3, revision: 41, record, spec };
 * ```
 */
export interface Dormant {
  epoch: number;
  revision: number;
  record: SplitRecord;
  spec: SplitSpec;
  /** It ran before (committed progress): resumed before grants that never ran. */
  ran?: boolean;
  /** Released, never resumed: a hand-back whose write may land yet (this epoch is never started again). */
  release?: true;
  /** Its record was unreadable at the last try (logged once). */
  unreadable?: boolean;
}

/**
 * What tenancy `t`, ended, leaves to resume: its record, and whether it ran.
 *
 * @example
 * ```ts ignore
 * onOrphan(id, dormantOf(t)); // resumed at a new epoch (or released) once the store answers
 * ```
 */
export function dormantOf(t: Tenancy): Dormant {
  return { epoch: t.epoch, revision: t.revision, record: t.record, spec: t.spec, ran: t.prog.progress !== null };
}
