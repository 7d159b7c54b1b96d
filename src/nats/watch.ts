/**
 * A store watch over NATS: snapshot, `ready`, live changes; re-established
 * with `reset` and a fresh snapshot when it breaks (reconnect, server
 * restart, consumer lost with its node in a cluster).
 *
 * @module
 */
import { JetStreamApiError } from "@nats-io/jetstream";
import { StoreWatch } from "../store/store_watch.ts";
import type { Connection } from "./connection.ts";
import { describe } from "./describe.ts";
import { sleep } from "../util/timers.ts";
import { type BucketMessage, lastRevisionUnder, type Scan, startScan } from "./scan.ts";

/**
 * While a snapshot is being replayed, how often the stream is asked for the
 * last revision under the filter (the replay is over once it is handled).
 * On nats-server 2.9 the `pending` count delivered with a message can stay
 * above zero for good: a key updated between the consumer's creation and
 * the first delivery leaves its superseded message counted as pending, and
 * no message with `pending === 0` ever comes.
 */
export const REPLAY_PROBE_MS = 100;
const CONSUMER_NOT_FOUND = 10014;

/**
 * A watch of one filter; see the `Watch` contract in store.ts. The kit's
 * `StoreWatch` owns the events, `stop` and the reset owed; this class the
 * ordered consumer that delivers the snapshot and then the live changes.
 */
export class NatsWatch extends StoreWatch {
  #conn: Connection;
  #filter: string;
  #scan?: Scan;
  /** Bumped on every (re)start; callbacks of older generations are ignored. */
  #generation = 0;
  #unwatch: () => void;
  #checking = false;
  #failures = 0;
  #unlisten: () => void;
  #onStop: (w: NatsWatch) => void;

  constructor(conn: Connection, filter: string, onStop: (w: NatsWatch) => void) {
    super();
    this.#conn = conn;
    this.#filter = filter;
    this.#onStop = onStop;
    this.#unlisten = conn.onReconnect((reason) => this.#restart(reason));
    this.#unwatch = conn.guard(() => this.check());
    this.#run(++this.#generation);
  }

  protected onStop(): void {
    this.#generation++;
    this.#unwatch();
    this.#unlisten();
    this.#scan?.stop();
    this.#scan = undefined;
    this.#onStop(this);
  }

  #restart(reason: string): void {
    if (this.stopped) return;
    const gen = ++this.#generation;
    this.#scan?.stop();
    this.#scan = undefined;
    this.owedReset(reason);
    this.#run(gen);
  }

  /** Opens a consumer for generation `gen`, retrying until it works or is superseded. */
  async #run(gen: number): Promise<void> {
    let backoff = 100;
    while (gen === this.#generation && !this.stopped) {
      try {
        await this.#open(gen);
        return;
      } catch {
        await sleep(backoff);
        backoff = Math.min(backoff * 2, 2000);
        await this.#conn.waitConnected(Date.now() + 5000);
      }
    }
  }

  async #open(gen: number): Promise<void> {
    let ready = false;
    /** Keys delivered in the current snapshot (a delete during replay must be told). */
    let seen: Set<string> | undefined = new Set();
    /** Stream sequence of the last message handled. */
    let last = 0;
    /** The revision the replay must reach (see `Scan.endAt`); `undefined` until read, or when it cannot be. */
    let endAt: number | undefined;
    /** The end cannot be read: pending counts and the probe below decide. */
    let blind = false;
    let lastPending = Infinity;
    const end = () => {
      ready = true;
      seen = undefined;
      this.emit({ type: "ready" });
    };
    const onMessage = (m: BucketMessage) => {
      if (gen !== this.#generation) return;
      last = Math.max(last, m.revision);
      if (!ready) {
        this.replayed(seen!, m.key, m.value ?? null, m.revision);
        lastPending = m.pending;
        if (endAt !== undefined ? last >= endAt : blind && m.pending === 0) end();
        return;
      }
      this.changed(m.key, m.value ?? null, m.revision);
    };
    const scan = await startScan(this.#conn, this.#filter, onMessage);
    if (gen !== this.#generation || this.stopped) {
      scan.stop();
      return;
    }
    this.#scan = scan;
    this.#failures = 0;
    const at = await scan.endAt;
    if (gen !== this.#generation || this.stopped || ready) return;
    if (at !== undefined) {
      endAt = at;
      if (last >= at) end();
      return;
    }
    blind = true;
    if (scan.pendingAtStart === 0 || lastPending === 0) return end();
    // Blind to the end: the replay is over once we handled the last message
    // under the filter (see REPLAY_PROBE_MS): the replay comes in stream
    // order, and every message of it is at or below that revision.
    (async () => {
      while (!ready && gen === this.#generation && !this.stopped) {
        await sleep(REPLAY_PROBE_MS);
        if (ready || gen !== this.#generation || this.stopped) return;
        try {
          const at = await lastRevisionUnder(this.#conn, this.#filter);
          if (!ready && gen === this.#generation && last >= at) end();
        } catch { /* a lost consumer is the watchdog's business */ }
      }
    })();
    scan.closed.then(() => {
      if (gen === this.#generation && !this.stopped) this.#restart("watch consumer closed");
    });
  }

  /**
   * See `Watch.position`: the revision of the last message under the
   * filter, read from the stream (one request). Not the consumer's
   * delivered sequence: on nats-server 2.9 a filtered consumer moves it past
   * messages of other keys written right after its last delivery (measured:
   * 29 rounds in 30 when a burst of `split.` writes ends with `member.`
   * writes), and a leader then waited an op timeout to confirm a completion.
   * Nor its pending count, which 2.9 can leave above zero for good.
   */
  async position(): Promise<number> {
    if (!this.#scan || this.stopped) return Infinity;
    return await lastRevisionUnder(this.#conn, this.#filter);
  }

  /**
   * Is our consumer still there? (It vanishes with its node in a cluster.)
   * Called by the connection's watchdog, one watch per tick.
   */
  async check(): Promise<void> {
    const scan = this.#scan;
    if (this.#checking || !scan || this.stopped || !this.#conn.connected) return;
    this.#checking = true;
    const gen = this.#generation;
    try {
      await scan.consumer.info();
      this.#failures = 0;
    } catch (e) {
      if (gen !== this.#generation || this.stopped || !this.#conn.connected) return;
      const gone = e instanceof JetStreamApiError && e.code === CONSUMER_NOT_FOUND;
      // A lost consumer at once; anything else (timeouts) when it persists.
      if (gone || ++this.#failures >= 2) this.#restart(`watch consumer lost: ${describe(e)}`);
    } finally {
      this.#checking = false;
    }
  }
}
