// A job's life from a terminal (issue 41) through the CLI as a process, on
// nats-server (tests/ops/lifecycle_session.ts has the sessions).
import { NatsStore } from "../../nats.ts";
import { NatsServer } from "../helpers/nats_server.ts";
import { pauseSession, permanentSession, rerunSession, type SessionStore, waitSession } from "./lifecycle_session.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };
const server = await NatsServer.startForModule();
const store: SessionStore = {
  env: { NATS_URL: server.wsUrl },
  open: (job) => NatsStore.connect({ servers: server.wsUrl, job, opTimeoutMs: 400 }),
  deadEnv: { NATS_URL: "ws://127.0.0.1:1" },
};

Deno.test({
  name: "lifecycle cli on nats-server: wait exits by how the job ended (0, 5, 3, 4, 6, 7, 8), with a bar on a terminal and lines in a log",
  ...opts,
  fn: () => waitSession("wait", store),
});

Deno.test({
  name: "lifecycle cli on nats-server: a permanent failure quarantines at once and splits says so",
  ...opts,
  fn: () => permanentSession("perm", store),
});

Deno.test({
  name: "lifecycle cli on nats-server: pause and resume a job; status, jobs and wait say paused",
  ...opts,
  fn: () => pauseSession("pause", store),
});

Deno.test({
  name: "lifecycle cli on nats-server: rerun a finished job; refused while it runs; status and jobs list its runs",
  ...opts,
  fn: () => rerunSession("rerun", store),
});
