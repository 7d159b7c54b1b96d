// Redis as the kit's suites reach it (tests/store/backend_suites.ts): the
// server the test command started (REDIS_URL, AOF with appendfsync always),
// a fresh job per store; servers of the test's own (tests/helpers/redis_server.ts)
// to fault; values planted with redis-cli-free raw commands of the store's layout.
import { createClient } from "@redis/client";
import { RedisStore, type RedisStoreOptions } from "../../adapters/redis.ts";
import { silentLogger } from "../../host.ts";
import { jobKeys } from "../../src/redis/options.ts";
import type { BackendHarness } from "../store/backend_suites.ts";
import { REAL_TIMINGS, realBackend } from "../coordinator/real_backend.ts";
import { noRedis, REDIS_URL, RedisServer } from "../helpers/redis_server.ts";
import { LazyProxy } from "../store/outage.ts";

const run = `${Date.now().toString(36)}${Math.floor(Math.random() * 1296).toString(36)}`;
let seq = 0;

/** A job name no other test (or earlier run on the same server) uses. */
export function freshJob(prefix = "t"): string {
  return `${prefix}${run}x${++seq}`;
}

/** A store on a fresh job (or `job`) of REDIS_URL, with a short operation timeout. */
export function redisStore(options: Partial<RedisStoreOptions> = {}): Promise<RedisStore> {
  return RedisStore.connect({ url: REDIS_URL, job: freshJob(), opTimeoutMs: 1000, logger: silentLogger, ...options });
}

/** One raw command on `url` (a connection of its own, closed after). */
export async function rawCommand(args: string[], url = REDIS_URL): Promise<unknown> {
  const c = createClient({ url, RESP: 2 });
  await c.connect();
  try {
    return await c.sendCommand(args);
  } finally {
    await c.close();
  }
}

/** The Redis harness. */
export const redisHarness: BackendHarness = {
  id: "redis",
  ...(noRedis ? { missing: "REDIS_URL is not set (npm test starts redis-server)" } : {}),
  store: (opTimeoutMs = 1000) => redisStore({ opTimeoutMs }),
  scenarios: () => realBackend("redis", (job) => redisStore({ job, opTimeoutMs: REAL_TIMINGS.opTimeoutMs, pollIntervalMs: 250 })),
  faults: {
    label: "redis",
    // A command issued while the connection is down waits in node-redis's queue, unsent, until it is back.
    holdsWrites: true,
    async start() {
      const server = await RedisServer.start();
      const proxy = new LazyProxy(() => server.port);
      return {
        connect: (job, opTimeoutMs, proxied) =>
          RedisStore.connect({ url: `redis://127.0.0.1:${proxied ? proxy.port : server.port}`, job, opTimeoutMs, logger: silentLogger }),
        pause: () => server.pause(),
        resume: () => server.resume(),
        stop: () => server.stop(),
        restart: () => server.restart(),
        killConnections: async () => void (await server.killClients()),
        isolate: () => proxy.isolate(),
        rejoin: () => proxy.rejoin(),
        async [Symbol.asyncDispose]() {
          await proxy[Symbol.asyncDispose]();
          await server[Symbol.asyncDispose]();
        },
      };
    },
  },
  // Written as another tool would, straight into the job's keys: the value, its revision and a log entry.
  async plant(store, key, value) {
    const k = jobKeys((store as RedisStore).keyPrefix, store.job!);
    await rawCommand([
      "EVAL",
      "local r = redis.call('INCR', KEYS[3]); redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]); redis.call('ZADD', KEYS[2], r, ARGV[1]); " +
      "redis.call('XADD', KEYS[4], r .. '-0', 'k', ARGV[1], 'v', ARGV[2]); return r",
      "4", k.kv, k.rev, k.head, k.log, key, value,
    ]);
  },
};
