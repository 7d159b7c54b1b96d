/**
 * Unreadable control records a CAS of ours replaced (docs/OPERATIONS.md,
 * `/status.invalidRecords` with `replaced: true`): counted, logged and the
 * last few kept for status. One per coordinator, shared through `Core` like
 * its stats: whichever part writes over an unreadable record notes it here,
 * and status reads it, so no part calls back into another.
 *
 * @module
 */
import type { CoordinatorStats } from "./coordinator_stats.ts";
import type { Logger } from "../util/logger.ts";

/** Replaced records kept for status. */
const KEPT = 20;

/** One unreadable record that a write of ours replaced. */
export interface ReplacedRecord {
  /** Its store key. */
  key: string;
  /** Why it could not be read. */
  message: string;
}

/**
 * The replaced records of one coordinator.
 *
 * @example
 * ```ts ignore
 * const replaced = new ReplacedRecords(stats, log);
 * replaced.note("plan", "Invalid plan record: ...");
 * replaced.recent; // [{ key: "plan", message: "Invalid plan record: ..." }]
 * ```
 */
export class ReplacedRecords {
  readonly #recent: ReplacedRecord[] = [];
  readonly #stats: CoordinatorStats;
  readonly #log: Logger;

  constructor(stats: CoordinatorStats, log: Logger) {
    this.#stats = stats;
    this.#log = log;
  }

  /** Counts, logs and keeps a record a CAS of ours replaced. */
  note(key: string, message: string): void {
    this.#stats.recordsReplaced++;
    this.#log("warn", "Unreadable record replaced", { key, error: message });
    this.#recent.push({ key, message });
    if (this.#recent.length > KEPT) this.#recent.shift();
  }

  /** The last {@linkcode KEPT} replaced, oldest first. */
  get recent(): readonly ReplacedRecord[] {
    return this.#recent;
  }
}
