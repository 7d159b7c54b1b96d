/**
 * How a PostgreSQL store's watches of exact keys (a member's assignment,
 * the plan, the leader record) learn that their key changed: by `LISTEN`,
 * or by a poll of all of them in one statement.
 *
 * PostgreSQL (up to 18 at least) signals every listening connection of a
 * database at every commit that notifies, whatever the channel: each
 * listening worker adds a wake-up of a server process to every write of
 * the fleet (100 listening connections cut the write rate about tenfold).
 * A fleet's leader and observers watch prefixes and must hear every write
 * anyway; a member's own keys change a few times per split it runs. So by
 * default these watches listen while the job is small (at most 16 member
 * records) and poll once it is large (more than 24; in between they keep
 * what they do), the members counted every 5 s. The poll's period follows
 * the fleet's size too: a millisecond per member, from 10 to 100 ms (at
 * most about 1000 of these reads per second for a fleet of up to 100).
 *
 * Either way a watch reads what changed from the tables: a wake-up source
 * that is late or switched costs latency, never a change (each watch also
 * polls on its own every `pollIntervalMs`).
 *
 * @module
 */
import { keys } from "../store/keys.ts";
import type { Notifications } from "./notifications.ts";
import type { ResolvedPgOptions } from "./options.ts";
import type { PgWatch } from "./pg_watch.ts";
import { filterSql, type Queries, rev } from "./queries.ts";
import type { SqlClient, SqlRow } from "./sql_client.ts";

/** At most this many members: exact-key watches listen (`listenExactKeys` unset). */
export const LISTEN_MAX_MEMBERS = 16;
/** More than this many members: exact-key watches poll. */
export const POLL_MIN_MEMBERS = 24;
const POLL_MIN_MS = 10;
const POLL_MAX_MS = 100;
const POLL_MS_PER_MEMBER = 1;
const RECOUNT_MS = 5000;
/** The job's member records (`member.<instance>`). */
const MEMBERS = filterSql(keys.memberPrefix);

/** What the exact-key watches of one store run on. */
export interface KeyWatchesInit {
  client: SqlClient;
  q: Queries;
  jobId: number;
  opts: ResolvedPgOptions;
  notifications: Notifications;
}

/** The exact-key watches of one store and how they are woken. */
export class KeyWatches {
  readonly #init: KeyWatchesInit;
  /** Watches by key, with the channel each listens on in listen mode. */
  readonly #byKey = new Map<string, Set<PgWatch>>();
  readonly #channel = new Map<PgWatch, { key: string; channel: string }>();
  #mode: "listen" | "poll" | undefined;
  #deciding: Promise<void> | undefined;
  #members = 0;
  #countedAt = -Infinity;
  #loop: Promise<void> | undefined;
  #wakeLoop: (() => void) | undefined;
  #closed = false;

  constructor(init: KeyWatchesInit) {
    this.#init = init;
    const fixed = init.opts.listenExactKeys;
    if (fixed !== undefined) this.#mode = fixed ? "listen" : "poll";
  }

  /** How the watches are woken now (`undefined` before the first watch). */
  get mode(): "listen" | "poll" | undefined {
    return this.#mode;
  }

  /** Registers `w`, the watch of `key`; resolves once it will be woken (a `LISTEN` took effect, or could not). */
  async add(w: PgWatch, key: string, channel: string): Promise<void> {
    let set = this.#byKey.get(key);
    if (!set) this.#byKey.set(key, (set = new Set()));
    set.add(w);
    this.#channel.set(w, { key, channel });
    this.#loop ??= this.#run();
    if (this.#mode === undefined) await (this.#deciding ??= this.#decide());
    if (this.#mode === "listen" && this.#channel.has(w)) await this.#init.notifications.add(channel);
  }

  /** `w` stopped. */
  remove(w: PgWatch): void {
    const at = this.#channel.get(w);
    if (!at) return;
    this.#channel.delete(w);
    const set = this.#byKey.get(at.key);
    set?.delete(w);
    if (set?.size === 0) this.#byKey.delete(at.key);
    if (this.#mode === "listen") this.#init.notifications.remove(at.channel);
  }

  /** Stops polling (the store closes). */
  async close(): Promise<void> {
    this.#closed = true;
    this.#wakeLoop?.();
    await this.#loop;
  }

  /** The first watch: the mode the fleet's size asks for. */
  async #decide(): Promise<void> {
    await this.#count();
    this.#mode ??= this.#members <= LISTEN_MAX_MEMBERS ? "listen" : "poll";
  }

  /** Counts the job's members (a failed count keeps the last). */
  async #count(): Promise<void> {
    this.#countedAt = Date.now();
    const { client, q, jobId, opts } = this.#init;
    try {
      const rows = await client.query(q.countPrefix, [jobId, ...MEMBERS.params], AbortSignal.timeout(opts.opTimeoutMs));
      this.#members = Number(rows[0]?.n ?? 0);
    } catch {
      // the last count stands
    }
  }

  /** Switches every watch to `mode`, then wakes them all (whatever the old source missed meanwhile). */
  #switch(mode: "listen" | "poll"): void {
    if (mode === this.#mode) return;
    const n = this.#init.notifications;
    for (const { channel } of this.#channel.values()) {
      if (mode === "listen") void n.add(channel);
      else n.remove(channel);
    }
    this.#mode = mode;
    for (const w of this.#channel.keys()) w.wake();
  }

  /** Recounts the members every 5 s (auto mode), and polls the keys in poll mode; ends when no watch is left. */
  async #run(): Promise<void> {
    const { opts } = this.#init;
    while (!this.#closed && this.#byKey.size > 0) {
      const period = this.#mode === "poll"
        ? opts.keyPollMs ?? Math.min(POLL_MAX_MS, Math.max(POLL_MIN_MS, Math.round(this.#members * POLL_MS_PER_MEMBER)))
        : RECOUNT_MS;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, period);
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.#wakeLoop = done;
      });
      this.#wakeLoop = undefined;
      if (this.#closed || this.#byKey.size === 0) break;
      if (opts.listenExactKeys === undefined && Date.now() - this.#countedAt >= RECOUNT_MS) {
        await this.#count();
        if (this.#members <= LISTEN_MAX_MEMBERS) this.#switch("listen");
        else if (this.#members > POLL_MIN_MEMBERS) this.#switch("poll");
      }
      if (this.#mode === "poll") await this.#poll();
    }
    this.#loop = undefined;
  }

  /** One read of every polled key's revision; wakes the watches whose key moved past what they read. */
  async #poll(): Promise<void> {
    const { client, q, jobId, opts } = this.#init;
    let rows: SqlRow[];
    try {
      rows = await client.query(q.keys, [jobId, JSON.stringify([...this.#byKey.keys()])], AbortSignal.timeout(opts.opTimeoutMs));
    } catch {
      return; // each watch's own poll reads, and reports an outage
    }
    for (const r of rows) {
      const revision = rev(r.revision);
      for (const w of this.#byKey.get(String(r.key)) ?? []) if (revision > w.readUpTo) w.wake();
    }
  }
}
