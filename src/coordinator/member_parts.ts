/**
 * The parts of one member of a job, and what each tells the others: the
 * splits it holds (`Tenancies`), the follower of the leader's records and
 * its assignment (`Follower`), the leader role when elected
 * (`Leadership`), and the membership whose heartbeat gates them all (a
 * self-fence stops every lane and the leader role; a beat that lands
 * resumes what the store still names us for). The coordinator keeps the
 * lifecycle state these gates read, and the API over the parts.
 *
 * @module
 */
import type { SplitleaseError } from "../errors.ts";
import type { Core } from "./core.ts";
import type { JoinOptions } from "./join_options.ts";
import { Leadership } from "./leadership.ts";
import { Follower } from "./member/follower.ts";
import { VERSION } from "./member/job_check.ts";
import { Membership } from "./member/membership.ts";
import { Tenancies } from "./member/tenancies.ts";

/** What the parts ask of their coordinator: gates over its lifecycle state, and what ends or drains it. */
export interface MemberGates {
  /** Whether new work may be taken now (running, not draining or paused, membership fresh). */
  mayClaim(): boolean;
  /** Whether this member may lead now (running or draining, not self-fenced; not draining). */
  mayLead(): boolean;
  /** Whether our membership is proven now (the last heartbeat started less than the twin wait ago). */
  fresh(): boolean;
  /** Another live process uses our instance id: the coordinator fails. */
  onDuplicate(error: SplitleaseError): void;
  /** An operator wrote `draining: true` into our member record. */
  onDrainRequested(): void;
}

/** One member's parts, wired to each other. */
export interface MemberParts {
  readonly tenancies: Tenancies;
  readonly follower: Follower;
  readonly leadership: Leadership;
  readonly membership: Membership;
  /** Unsubscribes from the shard seat's lane changes (a sharded job's shard), if there is a seat. */
  readonly unseat: (() => void) | undefined;
}

/**
 * Builds a member's parts over `core` and wires them to each other and to
 * the coordinator's `gates`. Starts nothing: the coordinator opens the
 * follower's watches, registers the membership and starts it.
 *
 * @example
 * ```ts ignore
 * const { tenancies, follower, leadership, membership, unseat } = wireMember(core, options, gates);
 * ```
 */
export function wireMember(core: Core, options: JoinOptions, gates: MemberGates): MemberParts {
  // Orphans: the follower (built next; reached only once a tenancy ends) resumes or releases them.
  // A start that waited for its fence checks again that we take work.
  const tenancies = new Tenancies(core, (id, d) => follower.remember(id, d), () => gates.mayClaim());
  const follower = new Follower(core, tenancies, () => gates.mayClaim());
  const leadership = new Leadership(
    core,
    follower,
    options.planner,
    // A sharded job's shard stands in elections once the member joined every shard (`ShardSeat.joined`).
    () => gates.mayLead() && (options.shard?.joined?.() ?? true),
    () => gates.fresh(),
    options.leadWhileStalled === true,
  );
  /** No heartbeat for leaseMs - margin: stop every lane before the leader can judge us dead. */
  const onStarved = (): void => {
    core.log("error", "Self-fenced: no successful heartbeat within the lease", {
      instance: core.me.instance,
      held: tenancies.held.size,
    });
    leadership.stop();
    for (const id of [...tenancies.held.keys()]) {
      const t = tenancies.lose(id, "starved");
      if (t) follower.remember(id, { epoch: t.epoch, revision: t.revision, record: t.record, spec: t.spec });
    }
  };
  const membership = new Membership(core, {
    extraBeat: () => leadership.beat(),
    onStarved,
    onRestored: (revision) => {
      follower.restored(revision);
      void follower.resume();
    },
    onBeat: () => {
      if (follower.dormant > 0) void follower.resume();
      core.schedule();
    },
    onDuplicate: (e) => gates.onDuplicate(e),
    onDrainRequested: () => gates.onDrainRequested(),
    // Splits given up by their holder (a failed terminal write) are not counted: the leader's anti-entropy re-grants them.
    held: () => tenancies.held.size - tenancies.stuck + follower.claiming.size + follower.dormant,
    seen: () => follower.assign?.revision,
    estimates: () => tenancies.estimates(),
  }, options.runtime ?? "web", VERSION, options.planner !== undefined);
  // A sharded job's shard: lanes the other shards free may be claimed here; a shift tells our leader early.
  const unseat = options.shard?.onChange(() => {
    membership.lanesChanged();
    core.schedule();
  });
  return { tenancies, follower, leadership, membership, unseat };
}
