/**
 * Writes nobody received. A JetStream write the server answers "no
 * responders" (status 503) reached no stream: a replicated bucket electing
 * its stream leader, or one just created whose leader's interest has not
 * reached every server of a busy cluster yet. Unlike a timeout it cannot
 * have landed, so it is sent again — within the operation's deadline —
 * instead of being reported as an outage (issue 33 item 7: the first write
 * to a fresh R3 bucket on a loaded cluster failed that way).
 *
 * @module
 */
import { sleep } from "../util/timers.ts";

/**
 * Whether `e` is a "no responders" answer: the request reached no
 * subscriber, so nothing was written. The client reports it as
 * `JetStreamNotEnabled` caused by a request error that says so.
 *
 * @example
 * ```ts
 * import { isNoResponders } from "./unsent.ts";
 * console.log(isNoResponders(new Error("timeout"))); // false
 * ```
 */
export function isNoResponders(e: unknown): boolean {
  for (let c = e, depth = 0; c instanceof Error && depth < 5; c = c.cause, depth++) {
    const r = c as Error & { isNoResponders?: () => boolean };
    if (typeof r.isNoResponders === "function" && r.isNoResponders()) return true;
    if (c.name === "NoRespondersError") return true;
  }
  return false;
}

/**
 * Runs `write`, again while it is answered "no responders" and the next
 * try still fits before `deadline` (ms since the epoch, as `Date.now()`),
 * backing off from 25 ms to 250 ms. Any other error, or "no responders"
 * at the deadline, is thrown as it came.
 *
 * @example
 * ```ts ignore
 * const rev = await untilReceived(deadline, () => kv.put(key, value, { previousSeq: 0 }));
 * ```
 */
export async function untilReceived<T>(deadline: number, write: () => Promise<T>): Promise<T> {
  for (let attempt = 0;; attempt++) {
    try {
      return await write();
    } catch (e) {
      const pause = Math.min(250, 25 * 2 ** attempt);
      if (!isNoResponders(e) || Date.now() + pause >= deadline) throw e;
      await sleep(pause);
    }
  }
}
