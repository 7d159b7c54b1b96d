/**
 * Asking a server something right after a fault, as a user's code would: a
 * store operation is retried while the store reports an outage
 * (`StoreUnavailableError`), a write whose answer was lost is settled by a
 * re-read (it may have landed), and a question to a cluster's monitoring or
 * JetStream API is asked again until it gets an answer — each within a
 * deadline that names what it waited for. Never a fixed sleep: a cluster that
 * answers at once costs nothing, one still electing (a loaded machine, a
 * node just restarted) is waited out.
 *
 * @module
 */
import { StoreUnavailableError, type Store } from "../../store.ts";

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * `op()`, retried every 100 ms while it throws `StoreUnavailableError`, for
 * up to `ms` (default 20 s); any other error, or the outage past the
 * deadline, is thrown with `what` named.
 */
export async function whenAvailable<T>(what: string, op: () => Promise<T>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await op();
    } catch (e) {
      if (!(e instanceof StoreUnavailableError)) throw e;
      if (Date.now() > deadline) throw new Error(`${what}: the store was still unavailable after ${ms} ms`, { cause: e });
      await pause(100);
    }
  }
}

/**
 * A compare-and-swap of `key` to `value` at `revision` after a fault, as a
 * careful caller does it: retried while the store is unavailable; on a
 * conflict the key is re-read, and our value there means an earlier attempt
 * that reported the outage landed after all; a value `late` accepts (a write
 * of ours that timed out before the fault and landed since) moves the
 * revision on and the write is tried again. Returns the revision our value
 * is at. Anything else is a real conflict and fails.
 */
export async function casAfterFault(
  store: Store,
  key: string,
  value: string,
  revision: number,
  late: (value: string) => boolean = () => false,
  ms = 20_000,
): Promise<number> {
  const deadline = Date.now() + ms;
  let at = revision;
  for (;;) {
    const r = await whenAvailable(`the update of ${key}`, () => store.update(key, value, at), Math.max(1, deadline - Date.now()));
    if (r.ok) return r.revision;
    const cur = await whenAvailable(`the re-read of ${key}`, () => store.get(key), Math.max(1, deadline - Date.now()));
    if (cur?.value === value) return cur.revision;
    if (cur === undefined || !late(cur.value) || Date.now() > deadline) {
      throw new Error(`the update of ${key} to ${JSON.stringify(value)} conflicted: it holds ${JSON.stringify(cur?.value)}`);
    }
    at = cur.revision;
  }
}

/**
 * Asks `question()` until it answers with something `ok` accepts (default:
 * anything but `undefined`), for up to `ms` (default 20 s): for a cluster's
 * monitoring endpoints or JetStream API right after a fault or a start
 * (a stream electing its leader reports none; a node under load answers
 * late), where every error is worth asking again.
 */
export async function askUntil<T>(
  what: string,
  question: () => Promise<T>,
  ok: (answer: T) => boolean = (a) => a !== undefined,
  ms = 20_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const a = await question();
      if (ok(a)) return a;
      last = `answered ${JSON.stringify(a)}`;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`${what}: no answer after ${ms} ms (last: ${last instanceof Error ? last.message : last})`, { cause: last });
    await pause(100);
  }
}
