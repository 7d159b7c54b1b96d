/**
 * What a fleet view is asked: the states it filters on, in the one
 * vocabulary of the CLI, `/status`, `/fleet`, the page and the metrics, and
 * the query (filter and page) it lists splits by.
 *
 * @module
 */
import type { SplitStatus } from "../records.ts";

/**
 * A state a fleet query filters on, in the one vocabulary of the CLI,
 * `/status`, `/fleet`, the fleet page and the metrics: a split's status
 * (`runnable`, `completed`, `quarantined`, `cancelled`), or one half of
 * `runnable`: `owned` (a member holds it) or `unclaimed` (no owner: the
 * backlog).
 *
 * @example
 * ```ts
 * import type { FleetState } from "@splitlease/splitlease/admin";
 * const backlog: FleetState = "unclaimed";
 * ```
 */
export type FleetState = SplitStatus | "owned" | "unclaimed";

/**
 * Which splits a fleet view lists, and which page of them.
 *
 * @example
 * ```ts
 * import type { FleetQuery } from "@splitlease/splitlease/admin";
 * const q: FleetQuery = { state: "quarantined", limit: 50 };
 * const next: FleetQuery = { ...q, after: "split-0049" }; // the page after
 * ```
 */
export interface FleetQuery {
  /**
   * Only splits in this state (or these states). Default: every state. The
   * old words of the CLI and the page are accepted too: `running` for
   * `owned`, `waiting` (and `unowned`) for `unclaimed`.
   */
  state?: FleetState | readonly FleetState[];
  /** Only splits whose record names this instance as owner. */
  owner?: string;
  /** Cursor: only splits whose id sorts after this one (the `page.next` of the previous page). */
  after?: string;
  /** Splits per page: 1 to 1000, default 100. */
  limit?: number;
  /** Only splits whose id, owner or descriptor preview contains this text (case-insensitive; 1-200 characters). */
  match?: string;
}
