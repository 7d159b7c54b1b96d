/**
 * A member as a fleet view shows it, and the leader's judgement of members
 * a view built on the leader takes.
 *
 * @module
 */
import type { MemberLiveness } from "./member_liveness.ts";

/**
 * The leader's judgement of members, for a view built on the leader (it
 * judges on its own clock, from their heartbeats' revisions); a view built
 * anywhere else judges each member by its lease against its own clock
 * (`src/fleet/member_liveness.ts`).
 *
 * @example
 * ```ts
 * import type { FleetLiveness } from "@splitlease/splitlease/admin";
 * const onLeader: FleetLiveness = { by: "pod-0", liveMembers: ["pod-0", "pod-1"] };
 * ```
 */
export interface FleetLiveness {
  /** The instance that judged (the leader serving the view). */
  by: string;
  /** The members it judges alive. */
  liveMembers: readonly string[];
}

/**
 * A member as a fleet view shows it.
 *
 * @example
 * ```ts
 * import type { FleetMember } from "@splitlease/splitlease/admin";
 * function line(m: FleetMember): string {
 *   return `${m.instance} ${m.owned}/${m.maxInFlight} ${m.alive === null ? `beat ${m.beat}` : m.alive ? "alive" : "dead"}`;
 * }
 * ```
 */
export interface FleetMember {
  /** The member's stable name (its `member.<instance>` record). */
  instance: string;
  /** Process session nonce. */
  session: string;
  /** Runtime and version, e.g. `deno 2.9.6`. */
  runtime: string;
  /** The splitlease version it runs (a mixed fleet shows during a rollout). */
  version: string;
  /** Lanes it runs at most (0: standby). */
  maxInFlight: number;
  /** Runnable splits whose record names this member (this session) as owner. */
  owned: number;
  /** Splits it reported holding on its last beat, if it reports them. */
  held: number | null;
  /** Its heartbeat counter: it grows every `leaseMs / 3` while the member lives. */
  beat: number;
  /** Draining to leave (it gets no new work). */
  draining: boolean;
  /** Runs a planner (preferred as leader). */
  planner: boolean;
  /** It is the leader named by the `leader` record. */
  leader: boolean;
  /** Not past its lease ({@linkcode FleetMember.liveness} `alive`), or `null` when its record carries no time to judge by. */
  alive: boolean | null;
  /**
   * Judged by the leader's rule (`src/fleet/member_liveness.ts`): `alive`,
   * `unresponsive` (past its lease: no heartbeat for `lease` ms; runnable
   * splits still name it, not taken over yet), `gone` (past its lease,
   * nothing names it), `unknown` (no time in its record). On the leader,
   * by the leader's own judgement; elsewhere by its `lease` against the
   * time of its last beat ({@linkcode FleetMember.lastBeatAt}).
   */
  liveness: MemberLiveness;
  /** The lease it is judged by (its record's, else two minutes for records that name none). */
  lease: number;
  /**
   * What it does: `working` (holds splits), `idle` (holds none), `standby`
   * (`maxInFlight: 0`), `draining` — by its last report while it is alive;
   * `unresponsive` or `gone` once it is past its lease (its last report is
   * no longer true).
   */
  activity: "working" | "idle" | "standby" | "draining" | "unresponsive" | "gone";
  /**
   * A `splitlease ui` process (an operator's shell serving the fleet page:
   * instance `splitlease-ui-…`, no lanes), not a worker of the fleet. It
   * may lead; pages offer no drain for it.
   */
  ui: boolean;
  /** Wall clock of its last beat as it wrote it (`null` in records from before it was written). */
  lastBeatAt: number | null;
  /** Splits it completed per minute over the view's rate window (from the records' completion times). */
  perMinute: number;
}
