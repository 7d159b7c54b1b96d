/**
 * The job's bucket: required (`createBucket: false`), created with the
 * project's settings (history 1, the value limit, no direct gets when
 * replicated), and, when replicated, waited for until its stream has a
 * leader.
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
  // is tried again, for at most five op timeouts (at least 10 s).
  const deadline = Date.now() + Math.max(10_000, 5 * opts.opTimeoutMs);
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
  const limit = Math.max(10_000, 5 * opts.opTimeoutMs);
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
