/**
 * A runnable object-store backfill worker for Deno, Bun and Node 24:
 *
 * ```sh
 * OBJSTORE_DIR=./data OUTPUT=out.ndjson JOB=backfill STORE=nats NATS_URL=ws://127.0.0.1:8080 \
 *   deno run -A examples/object_store/main.ts      # or: bun run …, node …
 * ```
 *
 * Input: see `config.ts` (OBJSTORE_DIR, or OBJSTORE_BUCKET + AWS_* + S3_ENDPOINT).
 * Output: every record's line appended to OUTPUT (at-least-once).
 * Coordination: STORE=nats (NATS_URL: nats://, tls://, ws:// or wss:// URLs, comma-separated;
 * NATS_USER and NATS_PASS when the server wants a login), STORE=postgres
 * (STORE_URL: a postgres:// URL), STORE=redis (STORE_URL: a redis:// or
 * rediss:// URL; REDIS_DURABILITY to accept a weaker server) or
 * STORE=memory (a single worker). Also
 * JOB, INSTANCE (the pod name), PORT (HTTP, default
 * 8080), BIND (default 0.0.0.0), MAX_IN_FLIGHT, SPLIT_BYTES, COMMIT_RECORDS,
 * COMMIT_MS, MIN_CUT_BYTES (least bytes of a piece when idle workers cut a
 * running split's remaining bytes; default 1 MiB), LEASE_MS,
 * DRAIN_DEADLINE_MS, AFTER_COMPLETION (`exit`, the default, or `idle`: stay
 * up and ready after the job completed, for a Kubernetes Deployment),
 * AFTER_STALL (`exit`, the default: exit 3 when only quarantined splits are
 * left; or `wait`: stay in the job, page and metrics
 * up, and take work again once an operator requeues; with MAX_IN_FLIGHT=0
 * the process is an observer, deploy/k8s/observer.yaml), and DELAY_MS (sleep per DELAY_EVERY records, to
 * slow a demo). For wss:// with a private CA, give the runtime the CA bundle:
 * DENO_CERT (Deno), NODE_EXTRA_CA_CERTS (Node, Bun).
 * Operator actions: DRAIN_TOKEN, the bearer token (RFC 6750 characters
 * `[A-Za-z0-9._~+/-]`, optionally ending in `=`; surrounding whitespace,
 * such as the newline of a Secret made from a file, is ignored) that
 * `POST /drain` and the operator actions take (the fleet page's Requeue,
 * Cancel and Drain buttons, `POST /splits/…`, `POST /members/…/drain`).
 * Without it those routes answer 403.
 * Exit codes: 0 drained, 3 stalled (AFTER_STALL=exit), 4 planner failed, 1 error.
 *
 * @module
 */
import process from "node:process";
import { MemoryStore, type Store } from "../../mod.ts";
import { NatsStore } from "../../nats.ts";
import { transportFor } from "../../adapters/nats_tcp.ts";
import type { ServeOptions, Service } from "../../host.ts";
import { backendFromEnv, type Env, intFromEnv } from "./config.ts";
import { fileSink } from "./file_sink.ts";
import { type ObjectSplit, objectStoreSource } from "./source.ts";

type Serve = (o: ServeOptions<ObjectSplit>) => Promise<Service>;

async function adapterServe(): Promise<Serve> {
  const g = globalThis as { Deno?: unknown; Bun?: unknown };
  if (g.Deno) return (await import("../../adapters/deno.ts")).serve;
  if (g.Bun) return (await import("../../adapters/bun.ts")).serve;
  return (await import("../../adapters/node.ts")).serve;
}

function fail(message: string): never {
  console.error(JSON.stringify({ level: "error", msg: `config: ${message}`, event: "startupFailed" }));
  process.exit(1);
}

async function main(env: Env): Promise<void> {
  let backend;
  try {
    backend = backendFromEnv(env);
  } catch (e) {
    fail((e as Error).message);
  }
  try {
    await backend.probe();
  } catch (e) {
    fail((e as Error).message);
  }
  const output = env.OUTPUT;
  if (!output) fail("OUTPUT is required: a file path where records are appended");
  const job = env.JOB || "objstore";
  const storeKind = env.STORE || "memory";
  if (storeKind !== "memory" && storeKind !== "nats" && storeKind !== "postgres" && storeKind !== "redis") {
    fail(`STORE must be "memory", "nats", "postgres" or "redis" (got ${storeKind})`);
  }
  if (storeKind === "nats" && !env.NATS_URL) {
    fail("STORE=nats needs NATS_URL (nats:// or tls:// URLs of nats-server's client port, or ws:// / wss:// of its websocket listener)");
  }
  if (storeKind === "postgres" && !/^postgres(ql)?:\/\//i.test(env.STORE_URL ?? "")) {
    fail("STORE=postgres needs STORE_URL (a postgres:// URL of the database the workers coordinate through)");
  }
  if (storeKind === "redis" && !/^rediss?:\/\//i.test(env.STORE_URL ?? "")) {
    fail("STORE=redis needs STORE_URL (a redis:// or rediss:// URL of the server the workers coordinate through)");
  }
  const afterCompletion = env.AFTER_COMPLETION || "exit";
  if (afterCompletion !== "exit" && afterCompletion !== "idle") fail(`AFTER_COMPLETION must be "exit" or "idle" (got ${afterCompletion})`);
  const afterStall = env.AFTER_STALL || "exit";
  if (afterStall !== "exit" && afterStall !== "wait") fail(`AFTER_STALL must be "exit" or "wait" (got ${afterStall})`);
  if ((env.NATS_USER === undefined) !== (env.NATS_PASS === undefined)) fail("NATS_USER and NATS_PASS go together");
  const drainToken = env.DRAIN_TOKEN?.trim() || undefined;
  if (drainToken !== undefined && !/^[A-Za-z0-9._~+/-]+=*$/.test(drainToken)) {
    fail(`DRAIN_TOKEN must be a bearer token of [A-Za-z0-9._~+/-] characters, optionally ending in "=" (got ${drainToken.length} characters)`);
  }
  let n: Record<string, number>;
  try {
    n = {
      port: intFromEnv(env, "PORT", 8080, 0),
      split: intFromEnv(env, "SPLIT_BYTES", 8 * 1024 * 1024),
      minCut: intFromEnv(env, "MIN_CUT_BYTES", 1024 * 1024),
      commitRecords: intFromEnv(env, "COMMIT_RECORDS", 500),
      commitMs: intFromEnv(env, "COMMIT_MS", 1000),
      leaseMs: intFromEnv(env, "LEASE_MS", 15_000),
      drainMs: intFromEnv(env, "DRAIN_DEADLINE_MS", 10_000),
      delayMs: intFromEnv(env, "DELAY_MS", 0, 0),
      delayEvery: intFromEnv(env, "DELAY_EVERY", 100),
      maxInFlight: intFromEnv(env, "MAX_IN_FLIGHT", 8, 0),
    };
  } catch (e) {
    fail((e as Error).message);
  }
  const sink = await fileSink(output);
  let seen = 0;
  const source = objectStoreSource({
    backend,
    targetSplitBytes: n.split,
    commitEveryRecords: n.commitRecords,
    commitEveryMs: n.commitMs,
    minCutBytes: n.minCut,
    sink: {
      async write(r) {
        await sink.write(r);
        if (n.delayMs > 0 && ++seen % n.delayEvery === 0) await new Promise((r) => setTimeout(r, n.delayMs));
      },
      flush: () => sink.flush(),
    },
  });
  const opTimeoutMs = Math.min(5000, Math.floor(n.leaseMs / 2));
  const store: { store?: Store; storeFactory?: () => Promise<Store> } = storeKind === "nats"
    ? {
      storeFactory: async () => {
        const servers = env.NATS_URL!.split(",").map((u) => u.trim()).filter(Boolean);
        // nats:// and tls://: the TCP transport. ws:// on Deno: the adapter's WebSocket
        // client (Deno's own stalls bursts ~40 ms, Nagle's algorithm).
        const tcp = transportFor(servers);
        const deno = !tcp && (globalThis as { Deno?: unknown }).Deno !== undefined;
        return await NatsStore.connect({
          servers,
          job,
          opTimeoutMs,
          ...(tcp ? { transport: tcp } : {}),
          ...(deno ? { wsFactory: (await import("../../adapters/deno.ts")).denoWebSocket } : {}),
          ...(env.NATS_USER !== undefined ? { user: env.NATS_USER, pass: env.NATS_PASS } : {}),
        });
      },
    }
    : storeKind === "postgres"
    ? {
      storeFactory: async () =>
        (await import("../../adapters/postgres.ts")).PostgresStore.connect({ url: env.STORE_URL!, job, opTimeoutMs }),
    }
    : storeKind === "redis"
    ? {
      storeFactory: async () =>
        (await import("../../adapters/redis.ts")).RedisStore.connect({
          url: env.STORE_URL!,
          job,
          opTimeoutMs,
          ...(env.REDIS_DURABILITY ? { durability: env.REDIS_DURABILITY as "always" | "everysec" | "none" } : {}),
        }),
    }
    : { store: new MemoryStore() };
  const serve = await adapterServe();
  const service = await serve({
    ...store,
    job,
    instance: env.INSTANCE || undefined,
    source,
    port: n.port,
    hostname: env.BIND || "0.0.0.0",
    drainToken,
    leaseMs: n.leaseMs,
    opTimeoutMs,
    drainDeadlineMs: Math.max(n.drainMs, opTimeoutMs),
    maxInFlight: n.maxInFlight,
    afterCompletion,
    afterStall,
    exit: false,
  });
  const { exitCode } = await service.done;
  await sink.close();
  process.exit(exitCode);
}

await main(process.env);
