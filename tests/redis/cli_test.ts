// The splitlease CLI with a redis:// store URL: an unknown job exits 1 naming
// it (nothing created), an unreachable server is STORE_UNAVAILABLE, the
// operator session of tests/ops (status, splits, requeue, drain, cancel on
// Deno and Node) runs on Redis, and `jobs` / `delete` see and remove a job.
import assert from "node:assert/strict";
import { RedisStore } from "../../adapters/redis.ts";
import { silentLogger } from "../../host.ts";
import { noRedis, REDIS_URL } from "../helpers/redis_server.ts";
import { cli, operatorSession } from "../ops/operator_session.ts";
import { freshJob, rawCommand } from "./harness.ts";

const opts = { sanitizeResources: false, sanitizeOps: false, ignore: noRedis };

Deno.test({
  name: "cli on Redis: an unknown job or an unreachable server exit 1 naming it, nothing created; jobs lists a job and delete removes its keys",
  ...opts,
  fn: async () => {
    const unknown = await cli("deno", ["status", "--job", "no-such-job"], { STORE_URL: REDIS_URL });
    assert.equal(unknown.code, 1, unknown.out);
    assert.match(unknown.out, /there is no job no-such-job under splitlease: on Redis at .* \(and createJob is false\)/);
    assert.equal(await rawCommand(["EXISTS", "splitlease:{no-such-job}:head"]), 0, "the CLI created no job");
    const down = await cli("deno", ["status", "--job", "x", "--op-timeout-ms", "500"], { STORE_URL: "redis://127.0.0.1:1" });
    assert.equal(down.code, 1, down.out);
    assert.match(down.out, /STORE_UNAVAILABLE/);

    const job = freshJob("cli");
    const s = await RedisStore.connect({ url: REDIS_URL, job, logger: silentLogger });
    await s.create("job", JSON.stringify({ v: 3 }));
    await s.close();
    const jobs = await cli("deno", ["jobs", "--json", "--job", job], { STORE_URL: REDIS_URL });
    assert.equal(jobs.code, 0, jobs.out);
    assert.deepEqual(JSON.parse(jobs.stdout).jobs.map((j: { job: string }) => j.job), [job]);
    const del = await cli("deno", ["delete", "--yes", "--force"], { STORE_URL: REDIS_URL, JOB: job });
    assert.equal(del.code, 0, del.out);
    assert.match(del.stdout.trim(), new RegExp(`^deleted job "${job}" \\(.*keys splitlease:\\{${job}\\}:\\* in Redis\\)$`));
    assert.equal(await rawCommand(["EXISTS", `splitlease:{${job}}:head`, `splitlease:{${job}}:kv`]), 0, "its keys are gone");
    assert.equal(await rawCommand(["SISMEMBER", "splitlease:jobs", job]), 0, "and its name");
  },
});

Deno.test({
  name: "cli on Redis: an operator session on a live fleet (deno cli.ts and node dist/cli.js)",
  ...opts,
  fn: () => operatorSession(freshJob("ops"), { STORE_URL: REDIS_URL }, (job) => RedisStore.connect({ url: REDIS_URL, job, opTimeoutMs: 400, logger: silentLogger })),
});
