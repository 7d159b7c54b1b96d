/**
 * The job's bucket: required (`createBucket: false`), created with the
 * project's settings (history 1, the value limit, no direct gets when
 * replicated), and, when replicated, waited for until its stream has a
 * leader; on a cluster that is still starting, JetStream itself is waited
 * for first.
 *
 * @module
 */
import { TimeoutError } from "@nats-io/nats-core";
import { JetStreamApiError, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { type KV, Kvm } from "@nats-io/kv";
import { SplitleaseError, StoreUnavailableError } from "../errors.ts";
import { MAX_VALUE_BYTES } from "../store/store.ts";
import { redactUrl, type ResolvedOptions } from "./options.ts";
import { sleep } from "../util/timers.ts";

const STREAM_NAME_IN_USE = 10058;
/** A stream with the bucket's subjects exists already: another process created the bucket at the same moment. */
const STREAM_SUBJECT_OVERLAP = 10065;
const STREAM_NOT_FOUND = 10059;

/** Throws `INVALID_CONFIG` when the job's bucket does not exist (`createBucket: false`). */
export async function requireBucket(jsm: JetStreamManager, opts: ResolvedOptions): Promise<void> {
  try {
    await jsm.streams.info(`KV_${opts.bucket}`);
  } catch (e) {
    if (e instanceof JetStreamApiError && e.code === STREAM_NOT_FOUND) {
      throw new SplitleaseError(
        "INVALID_CONFIG",
        `NatsStore: job ${JSON.stringify(opts.job)} has no bucket ${opts.bucket} on ${opts.servers.map(redactUrl).join(", ")} ` +
          "(createBucket: false); check the job name",
      );
    }
    throw e;
  }
}

/**
 * How long a connection to a cluster waits for JetStream and the bucket
 * while the cluster settles (its meta leader elected, every peer counted,
 * the bucket's stream leader elected): five op timeouts, at least 10 s.
 */
export function settleLimitMs(opts: ResolvedOptions): number {
  return Math.max(10_000, 5 * opts.opTimeoutMs);
}

/** JetStream's answer "JetStream system temporarily unavailable" (a cluster electing its meta leader). */
const JS_TEMPORARILY_UNAVAILABLE = 10008;

/**
 * The connection's JetStream manager, once JetStream answers. A cluster
 * whose nodes are starting (up, with no meta leader elected yet) lets the
 * account-info request time out, or answers "temporarily unavailable": for
 * a replicated bucket (a cluster) the request is asked again until
 * `deadline`. Measured: a fleet started together with its 3-node cluster
 * failed 6 connects of 6 in three rounds of four with "opening bucket:
 * TimeoutError", before its bucket's creation was even asked. A single
 * server answers once it takes connections: asked once.
 *
 * @example
 * ```ts ignore
 * const jsm = await readyJetStream(js, opts, Date.now() + settleLimitMs(opts));
 * ```
 */
export async function readyJetStream(js: JetStreamClient, opts: ResolvedOptions, deadline: number): Promise<JetStreamManager> {
  for (let attempt = 0;; attempt++) {
    try {
      return await js.jetstreamManager();
    } catch (e) {
      const settling = e instanceof TimeoutError || (e instanceof JetStreamApiError && e.code === JS_TEMPORARILY_UNAVAILABLE);
      if (opts.replicas > 1 && settling && Date.now() < deadline) {
        await sleep(Math.min(1000, 100 * 2 ** Math.min(attempt, 4)));
        continue;
      }
      throw e;
    }
  }
}

/** Creates (or opens) a bucket: `Kvm.create`, a seam for tests of the retry rules below. */
export type CreateBucket = (name: string, config: Record<string, unknown>) => Promise<KV>;

/**
 * Opens the job's bucket, creating it when absent (see the retry rules
 * below). `create` defaults to the client's `Kvm.create`.
 *
 * @example
 * ```ts ignore
 * const kv = await openBucket(js, opts);
 * ```
 */
export async function openBucket(
  js: JetStreamClient,
  opts: ResolvedOptions,
  create: CreateBucket = (name, config) => new Kvm(js).create(name, config),
  deadline: number = Date.now() + settleLimitMs(opts),
): Promise<KV> {
  const config = {
    history: 1,
    replicas: opts.replicas,
    // +1 KiB of headroom for the message headers; values are checked client side.
    maxValueSize: MAX_VALUE_BYTES + 1024,
    // Direct gets may be served by a stale follower: never for replicated buckets.
    allow_direct: opts.replicas === 1 ? undefined : false,
  } as Record<string, unknown>;
  if (config.allow_direct === undefined) delete config.allow_direct;
  // Creating a replicated stream is a meta-leader proposal: when a whole
  // fleet starts at once and every worker asks for the same R3 bucket, some
  // of the requests time out while the first one is applied (seen on 2.15.2
  // with three connections). Creating is idempotent, so a timed-out create
  // is tried again until `deadline` (by default five op timeouts, at least 10 s).
  for (let attempt = 0;; attempt++) {
    try {
      return await create(opts.bucket, config);
    } catch (e) {
      // Another process created it between our info and add (the server
      // answers "name in use" or, when the two adds cross, "subjects
      // overlap"): open it.
      const raced = e instanceof JetStreamApiError && (e.code === STREAM_NAME_IN_USE || e.code === STREAM_SUBJECT_OVERLAP);
      if (raced && attempt < 2) {
        await sleep(50);
        continue;
      }
      // A peer not placeable yet (a node restarting, or one a new cluster has not
      // counted as current) is as passing as a timeout: seen while a fleet and
      // its cluster started together ("no suitable peers for placement").
      const unplaced = e instanceof JetStreamApiError && /no suitable peers|peer offline|insufficient resources/i.test(e.message);
      if (opts.replicas > 1 && (e instanceof TimeoutError || unplaced) && Date.now() < deadline) {
        await sleep(Math.min(1000, 100 * 2 ** Math.min(attempt, 4)));
        continue;
      }
      throw e;
    }
  }
}

/**
 * Waits until a replicated bucket's stream has a Raft leader. A bucket just
 * created (or whose group is electing) answers writes with "no responders"
 * until then: measured on nats-server 2.15.2, the first write to a fresh R3
 * bucket failed that way. Bounded by five op timeouts (at least 10 s).
 */
export async function awaitStreamLeader(jsm: JetStreamManager, opts: ResolvedOptions): Promise<void> {
  const limit = settleLimitMs(opts);
  const deadline = Date.now() + limit;
  let last: unknown;
  for (;;) {
    try {
      const info = await jsm.streams.info(`KV_${opts.bucket}`);
      if (info.cluster?.leader) return;
    } catch (e) {
      last = e;
    }
    if (Date.now() >= deadline) {
      throw new StoreUnavailableError("connect", limit, {
        cause: last,
        detail: `the replicated bucket ${opts.bucket} has no stream leader after ${limit} ms (is a majority of its ${opts.replicas} servers up?)`,
      });
    }
    await sleep(100);
  }
}
