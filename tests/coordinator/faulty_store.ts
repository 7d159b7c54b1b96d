// Store wrappers for fault injection in coordinator tests.
import { StoreUnavailableError, SplitCoordinator } from "../../mod.ts";
import type { DeleteResult, StoreEntry, Watch, WatchEvent, WriteResult } from "../../store.ts";
import type { Store } from "../../mod.ts";
import { Channel } from "../../src/util/channel.ts";
import { FAST, type Fleet, type ManualDriver, Member } from "./fleet.ts";

/**
 * Wraps a store: `down` makes every op throw StoreUnavailableError; `paused`
 * withholds watch events until resumed (a stopped process sees nothing);
 * `hold(pred)` parks matching ops until released; `fail(pred)` makes matching
 * ops throw StoreUnavailableError (without applying) until stopped;
 * `withhold(pred)` withholds the watch events of matching keys (a watch that
 * has not delivered them yet) until released; `dieAfter(pred)` lets the next
 * matching op complete and then nothing more (the process died right after
 * it: later ops never answer, watches deliver nothing).
 */
export class FaultyStore implements Store {
  down = false;
  #paused = false;
  #watchers: { ch: Channel<WatchEvent>; buffer: WatchEvent[] }[] = [];
  #holds: { pred: (op: string, key: string, value?: string) => boolean; parked: (() => void)[] }[] = [];
  #fails: ((op: string, key: string, value?: string) => boolean)[] = [];
  #withheld: { pred: (key: string) => boolean; events: { ch: Channel<WatchEvent>; ev: WatchEvent }[] }[] = [];
  #observers: { pred: (ev: WatchEvent) => boolean; seen: boolean }[] = [];

  constructor(readonly inner: Store) {}

  pause(): void {
    this.#paused = true;
  }
  resume(): void {
    this.#paused = false;
    for (const w of this.#watchers) for (const ev of w.buffer.splice(0)) w.ch.push(ev);
  }
  /** Parks writes matching `pred`; returns a function releasing them. */
  hold(pred: (op: string, key: string, value?: string) => boolean): { release: () => void; count: () => number } {
    const h = { pred, parked: [] as (() => void)[] };
    this.#holds.push(h);
    return {
      release: () => {
        this.#holds.splice(this.#holds.indexOf(h), 1);
        for (const p of h.parked.splice(0)) p();
      },
      count: () => h.parked.length,
    };
  }

  /** Makes ops matching `pred` (given the value a write carries) throw StoreUnavailableError (not applied); returns a function that stops it. */
  fail(pred: (op: string, key: string, value?: string) => boolean): { stop: () => void } {
    this.#fails.push(pred);
    return { stop: () => void this.#fails.splice(this.#fails.indexOf(pred), 1) };
  }

  /**
   * Withholds watch events of keys matching `pred`; `release()` delivers them
   * (in order) and stops withholding, `release(n)` delivers only the first `n`
   * and goes on withholding (a watch catching up part of the way).
   */
  withhold(pred: (key: string) => boolean): { release: (n?: number) => void; count: () => number } {
    const w = { pred, events: [] as { ch: Channel<WatchEvent>; ev: WatchEvent }[] };
    this.#withheld.push(w);
    return {
      release: (n?: number) => {
        if (n === undefined) this.#withheld.splice(this.#withheld.indexOf(w), 1);
        for (const { ch, ev } of w.events.splice(0, n ?? w.events.length)) ch.push(ev);
      },
      count: () => w.events.length,
    };
  }

  /**
   * Whether a watch of this store has handed its consumer an event matching
   * `pred` since this call (the member behind it has it, not only the store).
   */
  delivered(pred: (ev: WatchEvent) => boolean): () => boolean {
    const o = { pred, seen: false };
    this.#observers.push(o);
    return () => o.seen;
  }

  #recorders: { pred: (key: string) => boolean; seen: { ch: Channel<WatchEvent>; ev: WatchEvent }[] }[] = [];

  /**
   * Records the events the watches hand their consumer for keys matching
   * `pred`; `again(i)` hands the i-th of them to its watch once more, after
   * whatever it delivered since: a late, older delivery (a watch re-created
   * on a replica that lags replays a revision its consumer already had).
   */
  record(pred: (key: string) => boolean): { events: () => WatchEvent[]; again: (i: number) => void } {
    const r = { pred, seen: [] as { ch: Channel<WatchEvent>; ev: WatchEvent }[] };
    this.#recorders.push(r);
    return { events: () => r.seen.map((x) => x.ev), again: (i) => r.seen[i].ch.push(r.seen[i].ev) };
  }

  #deliver(ch: Channel<WatchEvent>, ev: WatchEvent): void {
    for (const o of this.#observers) if (!o.seen && o.pred(ev)) o.seen = true;
    for (const r of this.#recorders) if ("key" in ev && r.pred(ev.key)) r.seen.push({ ch, ev });
    ch.push(ev);
  }

  #dead = false;
  #dying: ((op: string, key: string) => boolean) | undefined;

  /** The next op matching `pred` completes; after it the process is dead to the store. */
  dieAfter(pred: (op: string, key: string) => boolean): { dead: () => boolean } {
    this.#dying = pred;
    return { dead: () => this.#dead };
  }

  /** Runs one op through the gate; the op the process dies after marks it dead once it answered. */
  async #op<T>(op: string, key: string, run: () => Promise<T>, value?: string): Promise<T> {
    await this.#gate(op, key, value);
    const r = await run();
    if (this.#dying?.(op, key)) {
      this.#dying = undefined;
      this.#dead = true;
    }
    return r;
  }

  async #gate(op: string, key: string, value?: string): Promise<void> {
    if (this.#dead) await new Promise<never>(() => {});
    for (const h of this.#holds) {
      if (h.pred(op, key, value)) await new Promise<void>((r) => h.parked.push(r));
    }
    if (this.down) throw new StoreUnavailableError(op, 200, { detail: "injected outage" });
    if (this.#fails.some((f) => f(op, key, value))) throw new StoreUnavailableError(op, 200, { detail: "injected failure" });
  }

  create(key: string, value: string): Promise<WriteResult> {
    return this.#op("create", key, () => this.inner.create(key, value), value);
  }
  update(key: string, value: string, revision: number): Promise<WriteResult> {
    return this.#op("update", key, () => this.inner.update(key, value, revision), value);
  }
  delete(key: string, revision?: number): Promise<DeleteResult> {
    return this.#op("delete", key, () => this.inner.delete(key, revision));
  }
  get(key: string): Promise<StoreEntry | undefined> {
    return this.#op("get", key, () => this.inner.get(key));
  }
  list(filter: string): Promise<StoreEntry[]> {
    return this.#op("list", filter, () => this.inner.list(filter));
  }
  watch(filter: string): Watch {
    const inner = this.inner.watch(filter);
    const w = { ch: new Channel<WatchEvent>(), buffer: [] as WatchEvent[] };
    this.#watchers.push(w);
    (async () => {
      for await (const ev of inner) {
        if (this.#dead) continue;
        const held = "key" in ev ? this.#withheld.find((x) => x.pred(ev.key)) : undefined;
        if (held) held.events.push({ ch: w.ch, ev });
        else if (this.#paused) w.buffer.push(ev);
        else this.#deliver(w.ch, ev);
      }
      w.ch.close();
    })();
    const stop = async () => {
      await inner.stop();
      w.ch.close();
    };
    // A watch that has not delivered an event is not past it: while events are withheld (or buffered
    // by a pause) it is behind, as a lagging watch is (one that delivers in order has not applied any
    // later revision; this one has, so its position is "cannot tell yet").
    const position = inner.position
      ? async () => {
        const at = await inner.position!();
        const behind = w.buffer.length > 0 || this.#withheld.some((x) => x.events.some((e) => e.ch === w.ch));
        return behind ? Infinity : at;
      }
      : undefined;
    return { stop, position, [Symbol.asyncIterator]: () => w.ch[Symbol.asyncIterator](), [Symbol.asyncDispose]: stop };
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/**
 * Joins a worker `instance` whose store is a fault layer over `shared`,
 * and records when its heartbeat was restored after a self-fence (leader
 * time), for tests that fence a worker and let it come back. `maxInFlight`:
 * its lanes (the coordinator's default when left out).
 */
export async function joinBehindFaults(
  f: Fleet,
  driver: ManualDriver,
  shared: Store,
  instance: string,
  maxInFlight?: number,
): Promise<{ member: Member; store: FaultyStore; restored: number[] }> {
  const store = new FaultyStore(shared);
  const restored: number[] = [];
  const member = new Member(
    await SplitCoordinator.join({
      store,
      job: f.job,
      instance,
      clock: driver.clock,
      ...FAST,
      ...(maxInFlight !== undefined ? { maxInFlight } : {}),
      logger: (_level, msg) => {
        if (msg.startsWith("Heartbeat restored")) restored.push(driver.now());
      },
    }),
  );
  f.members.push(member);
  return { member, store, restored };
}
