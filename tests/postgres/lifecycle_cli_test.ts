// A job's life from a terminal (issue 41) through the CLI as a process, on
// PostgreSQL (tests/ops/lifecycle_session.ts has the sessions).
import { PostgresStore } from "../../adapters/postgres.ts";
import { freshJob, noPg, PG_URL } from "../helpers/pg.ts";
import { pauseSession, permanentSession, rerunSession, type SessionStore, waitSession } from "../ops/lifecycle_session.ts";

const opts = { sanitizeResources: false, sanitizeOps: false, ignore: noPg };
const store: SessionStore = {
  env: { STORE_URL: PG_URL },
  open: (job) => PostgresStore.connect({ url: PG_URL, job, opTimeoutMs: 400 }),
  deadEnv: { STORE_URL: "postgres://postgres@127.0.0.1:1/test" },
};

Deno.test({
  name: "lifecycle cli on PostgreSQL: wait exits by how the job ended (0, 5, 3, 4, 6, 7, 8), with a bar on a terminal and lines in a log",
  ...opts,
  fn: () => waitSession(freshJob("wait"), store),
});

Deno.test({
  name: "lifecycle cli on PostgreSQL: a permanent failure quarantines at once and splits says so",
  ...opts,
  fn: () => permanentSession(freshJob("perm"), store),
});

Deno.test({
  name: "lifecycle cli on PostgreSQL: pause and resume a job; status, jobs and wait say paused",
  ...opts,
  fn: () => pauseSession(freshJob("pause"), store),
});

Deno.test({
  name: "lifecycle cli on PostgreSQL: rerun a finished job; refused while it runs; status and jobs list its runs",
  ...opts,
  fn: () => rerunSession(freshJob("rerun"), store),
});
