/**
 * Reading the bucket with consumers: a replay of the last value of every
 * key under a filter, used by `list` (stop at the end of the replay) and by
 * `watch` (keep going with live changes).
 *
 * NATS has no end-of-replay marker: the consumer's pending count at creation
 * says whether there is anything to replay, and the message delivered with
 * `pending === 0` is the last one of the replay.
 *
 * @module
 */
import { DeliverPolicy, type JsMsg, type PushConsumer } from "@nats-io/jetstream";
import type { Connection } from "./connection.ts";

/** One message of the bucket, decoded. */
export interface BucketMessage {
  key: string;
  /** `undefined` for a delete or purge marker. */
  value: string | undefined;
  revision: number;
  /** Messages still pending on the consumer after this one. */
  pending: number;
}

const decoder = new TextDecoder();

/** The NATS subject filter of a store key filter. */
export function subjectFor(conn: Connection, filter: string): string {
  if (filter === "") return conn.prefix + ">";
  if (filter.endsWith(".")) return conn.prefix + filter + ">";
  return conn.prefix + filter;
}

/**
 * Revision of the last message (put or marker) under `filter` now, 0 when
 * there is none: one stream request. A replay comes in stream order, so a
 * consumer created before this call has delivered its whole replay once it
 * has handled this revision — whatever its pending count says (nats-server
 * 2.9 can leave that above zero for good).
 */
export async function lastRevisionUnder(conn: Connection, filter: string): Promise<number> {
  const m = await conn.jsm.streams.getMessage(conn.stream, { last_by_subj: subjectFor(conn, filter) });
  return m?.seq ?? 0;
}

/** Decodes a consumer message of the bucket. */
export function decodeMessage(conn: Connection, m: JsMsg): BucketMessage {
  // Delete and purge markers carry no data: a message with data is a put,
  // and its headers (every CAS write stores its expected-sequence header)
  // need not be decoded, which the client does per message when asked.
  const op = m.data.length > 0 ? undefined : m.headers?.get("KV-Operation");
  const marker = op === "DEL" || op === "PURGE";
  return {
    key: m.subject.substring(conn.prefix.length),
    value: marker ? undefined : decoder.decode(m.data),
    revision: m.seq,
    pending: m.info.pending,
  };
}

/** A running replay-then-live consumer over a filter. */
export interface Scan {
  /** The consumer (for health checks). */
  consumer: PushConsumer;
  /**
   * The revision the replay must reach: the last under the filter once the
   * consumer existed (0: nothing to replay), or `undefined` when it cannot
   * be read (no permission to get stream messages, an outage). The replay
   * comes in stream order, so it is over once a message at or past it is
   * handled — whatever the pending counts say: a replicated stream's
   * consumer can report 0 pending before it has counted its replay (seen on
   * 2.15.2, three nodes under load: a listing right after writes came back
   * empty, a watch said `ready` before its snapshot), and 2.9 can leave the
   * count above 0 for good.
   */
  endAt: Promise<number | undefined>;
  /** The pending count at creation (the fallback when `endAt` cannot be read). */
  pendingAtStart: number;
  /** Resolves when the consumer stops for any reason. */
  closed: Promise<unknown>;
  /** Stops consuming and deletes the consumer (best effort). */
  stop(): void;
}

/**
 * Starts an ordered push consumer delivering the last message of every key
 * under `filter`, then live messages, to `onMessage`.
 */
export async function startScan(
  conn: Connection,
  filter: string,
  onMessage: (m: BucketMessage) => void,
): Promise<Scan> {
  const consumer = await conn.js.consumers.getPushConsumer(conn.stream, {
    filter_subjects: subjectFor(conn, filter),
    deliver_policy: DeliverPolicy.LastPerSubject,
  });
  let stopped = false;
  const cleanup = () => {
    consumer.delete().catch(() => {});
  };
  try {
    const info = await consumer.info(true);
    const messages = await consumer.consume({
      callback: (m) => {
        if (!stopped) onMessage(decodeMessage(conn, m));
      },
    });
    const endAt = lastRevisionUnder(conn, filter).catch(() => undefined);
    return {
      consumer,
      endAt,
      pendingAtStart: info.num_pending,
      closed: messages.closed(),
      stop() {
        if (stopped) return;
        stopped = true;
        messages.stop();
        cleanup();
      },
    };
  } catch (e) {
    stopped = true;
    cleanup();
    throw e;
  }
}
