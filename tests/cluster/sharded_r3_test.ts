/**
 * The sharded-job scenarios (tests/coordinator/sharded.ts: one lane budget
 * across shards, lanes freed in one shard dealt from another, a shard's
 * leader dying while the others deal, cut residuals in their parent's
 * shard, completion when the last shard finishes) on R3 buckets of a
 * 3-node cluster of the current nats-server. Each shard is a bucket of its
 * own, so the cluster places each shard's stream leader by itself (issue
 * 39: a sharded job passes the same scenarios on R1 and R3; the R1 run is
 * in the NATS backend's suites).
 */
import { NatsStore } from "../../nats.ts";
import { shardJob } from "../../admin.ts";
import { denoWebSocket } from "../../adapters/deno_websocket.ts";
import { NatsCluster } from "../helpers/nats_server.ts";
import { shardedScenarios } from "../coordinator/sharded.ts";
import { RealDriver } from "../coordinator/fleet.ts";
import { REAL_TIMINGS } from "../coordinator/real_backend.ts";

let cluster: Promise<NatsCluster> | undefined;
/** One cluster for the file, stopped when the module unloads (teardown is not a test). */
const shared = () =>
  (cluster ??= NatsCluster.start(3, { pingInterval: "500ms" }).then((c) => {
    globalThis.addEventListener("unload", () => {
      for (const n of c.nodes) n.disposeSync();
    });
    return c;
  }));

shardedScenarios({
  name: "nats R3 ×3",
  time: () => new RealDriver(),
  timings: REAL_TIMINGS,
  store: async (job, index) =>
    await NatsStore.connect({
      servers: (await shared()).nodes.map((n) => n.wsUrl),
      job: shardJob(job, index),
      replicas: 3,
      opTimeoutMs: REAL_TIMINGS.opTimeoutMs,
      wsFactory: denoWebSocket,
    }),
});
