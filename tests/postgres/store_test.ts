// What the PostgreSQL store must hold beyond the shared conformance suite:
// revisions in commit order under concurrent writers (a watcher reading
// "revision > last seen" never skips a change), watches that resume after a
// disconnect and catch up behind a pruned change log without a reset, writes
// whose answer is lost resolved by re-reading, the transactional update,
// a LISTEN connection connected again after the server ended it, and literals
// that a naive dollar quote would end early.
import assert from "node:assert/strict";
import { SplitleaseError, StoreUnavailableError, type WatchEvent } from "../../store.ts";
import { PostgresJobCatalog, PostgresStore, type SqlClient, type SqlParam } from "../../adapters/postgres.ts";
import { listJobs } from "../../admin.ts";
import { freshJob, noPg, PG_URL, pgStore, pgStoreWith, sqlOnce, terminateConnections } from "../helpers/pg.ts";
import { take } from "../store/conformance.ts";
import postgres from "postgres";
import fc from "fast-check";
import { literal } from "../../src/postgres/queries.ts";

const opts = { sanitizeOps: false, sanitizeResources: false, ignore: noPg };

/** Collects a watch's events in the background. */
function collect(w: AsyncIterable<WatchEvent>): WatchEvent[] {
  const out: WatchEvent[] = [];
  void (async () => {
    for await (const e of w) out.push(e);
  })();
  return out;
}

async function until(cond: () => boolean, ms = 10_000, what = "condition"): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

Deno.test({
  name: "postgres: revisions are dense and in commit order under concurrent writers; a watcher misses none",
  ...opts,
  fn: async () => {
    const job = freshJob("order");
    const watcher = await pgStore({ job });
    const writers = await Promise.all([1, 2, 3, 4].map(() => pgStore({ job, poolSize: 4 })));
    try {
      const w = watcher.watch("k.");
      const events = collect(w);
      await until(() => events.some((e) => e.type === "ready"), 5000, "ready");
      // Every writer keeps 32 writes in flight on 64 shared keys: CAS races, creates and deletes
      // interleave, and commits of different connections overlap all the time.
      const landed = new Map<number, { key: string; value: string | null }>();
      const revs = new Map<string, number>();
      let stop = false;
      setTimeout(() => (stop = true), 1500);
      let n = 0;
      await Promise.all(writers.flatMap((s, wi) =>
        Array.from({ length: 32 }, async (_, li) => {
          while (!stop) {
            const key = `k.${(n++ * 7 + li) % 64}`;
            const value = `w${wi}l${li}n${n}`;
            const at = revs.get(key);
            if (at !== undefined && n % 13 === 0) {
              const d = await s.delete(key, at);
              if (d.ok) revs.delete(key);
              continue;
            }
            const r = at === undefined ? await s.create(key, value) : await s.update(key, value, at);
            if (r.ok) {
              assert.ok(!landed.has(r.revision), `revision ${r.revision} landed twice`);
              landed.set(r.revision, { key, value });
              revs.set(key, r.revision);
            } else {
              const cur = await s.get(key);
              if (cur) revs.set(key, cur.revision);
              else revs.delete(key);
            }
          }
        })
      ));
      const end = await writers[0].create("k.end", "end");
      assert.ok(end.ok);
      const top = end.revision;
      landed.set(top, { key: "k.end", value: "end" });
      await until(() => events.some((e) => e.type === "put" && e.revision === top), 10_000, `revision ${top}`);
      const changes = events.filter((e) => e.type === "put" || e.type === "delete") as { type: string; key: string; revision: number; value?: string }[];
      const seen = changes.map((e) => e.revision);
      // Strictly increasing: no change arrived after a later one.
      for (let i = 1; i < seen.length; i++) assert.ok(seen[i] > seen[i - 1], `revision ${seen[i]} after ${seen[i - 1]}`);
      // Every put landed is delivered with its value (deletes landed too: they are not in `landed`).
      const byRev = new Map(changes.map((e) => [e.revision, e]));
      for (const [r, put] of landed) {
        const e = byRev.get(r);
        assert.ok(e, `the watch skipped revision ${r} (${put.key})`);
        assert.equal(e.type, "put");
        assert.equal(e.key, put.key);
        assert.equal(e.value, put.value);
      }
      // Dense: the job's revisions are exactly 1..top, and the watch saw each one.
      assert.deepEqual(seen, Array.from({ length: top }, (_, i) => i + 1));
      assert.ok(landed.size > 500, `only ${landed.size} writes landed`);
      assert.equal(events.filter((e) => e.type === "reset").length, 0);
      await w.stop();
    } finally {
      await Promise.all([watcher, ...writers].map((s) => s.close()));
    }
  },
});

/** A client whose reads can be held (to let a watcher fall behind); `busy` counts reads under way. */
function holdable(c: SqlClient): SqlClient & { hold: boolean; busy: number } {
  let release: (() => void) | undefined;
  let gate: Promise<void> | undefined;
  const out = {
    ...c,
    busy: 0,
    get hold() {
      return gate !== undefined;
    },
    set hold(v: boolean) {
      if (v && !gate) gate = new Promise((r) => (release = r));
      if (!v && gate) {
        gate = undefined;
        release!();
      }
    },
    async query(text: string, params: readonly SqlParam[], signal?: AbortSignal) {
      if (gate) await gate;
      out.busy++;
      try {
        return await c.query(text, params, signal);
      } finally {
        out.busy--;
      }
    },
  };
  return out;
}

Deno.test({
  name: "postgres: a watch behind a pruned change log catches up from the live values, without a reset",
  ...opts,
  fn: async () => {
    let client!: SqlClient & { hold: boolean; busy: number };
    const watcher = await pgStoreWith((c) => (client = holdable(c)), { opTimeoutMs: 60_000 });
    const writer = await PostgresStore.connect({ url: PG_URL, job: watcher.job, changeLogSize: 4, changeLogMinAgeMs: 0 });
    try {
      await writer.create("k.gone", "x");
      const w = watcher.watch("k.");
      const events = collect(w);
      await until(() => events.some((e) => e.type === "ready"), 5000, "ready");
      client.hold = true;
      await until(() => client.busy === 0, 5000, "the watcher's reads under way to finish");
      let a = (await writer.create("k.a", "a0") as { revision: number }).revision;
      let b = (await writer.create("k.b", "b0") as { revision: number }).revision;
      for (let i = 1; i <= 30; i++) {
        a = (await writer.update("k.a", `a${i}`, a) as { revision: number }).revision;
        b = (await writer.update("k.b", `b${i}`, b) as { revision: number }).revision;
      }
      assert.deepEqual(await writer.delete("k.gone"), { ok: true });
      const floor = await sqlOnce<{ f: string }>(
        `select min(revision)::text as f from splitlease.log l join splitlease.jobs j on j.id = l.job where j.name = $1`,
        [writer.job],
      );
      assert.ok(Number(floor[0].f) > 3, `the log was pruned (oldest revision ${floor[0].f})`);
      client.hold = false;
      await until(() => events.some((e) => e.type === "delete"), 5000, "the delete");
      const live = events.slice(events.findIndex((e) => e.type === "ready") + 1);
      assert.deepEqual(live, [
        { type: "put", key: "k.a", value: "a30", revision: a },
        { type: "put", key: "k.b", value: "b30", revision: b },
        { type: "delete", key: "k.gone", revision: b + 1 },
      ]);
      await w.stop();
    } finally {
      await watcher.close();
      await writer.close();
    }
  },
});

Deno.test({
  name: "postgres: a watch resumes from its last revision after its connections are terminated (no reset)",
  ...opts,
  fn: async () => {
    const watcher = await pgStore({ pollIntervalMs: 200, applicationName: "watcher-under-test" });
    const writer = await pgStore({ job: watcher.job });
    try {
      const w = watcher.watch("");
      const events = collect(w);
      await until(() => events.some((e) => e.type === "ready"), 5000, "ready");
      await writer.create("a", "1");
      await until(() => events.length === 2, 5000, "the first put");
      assert.ok(await terminateConnections("watcher-under-test") >= 2, "the store's connections were there to end");
      for (let i = 0; i < 20; i++) await writer.create(`b${i}`, String(i));
      await until(() => events.length === 22, 10_000, "the puts written while disconnected");
      assert.deepEqual(events.map((e) => e.type === "put" ? e.revision : e.type), ["ready", ...Array.from({ length: 21 }, (_, i) => i + 1)]);
      // Woken again by NOTIFY once the listener is back (not only by the poll).
      await writer.create("c", "2");
      await until(() => events.length === 23, 5000, "a put after the reconnect");
      await w.stop();
    } finally {
      await watcher.close();
      await writer.close();
    }
  },
});

/** A client whose next write (a call of put or del) fails as `mode` says. */
function lossy(c: SqlClient): SqlClient & { mode?: "lost-answer" | "never-sent" } {
  const out: SqlClient & { mode?: "lost-answer" | "never-sent" } = {
    ...c,
    async query(text: string, params: readonly SqlParam[], signal?: AbortSignal) {
      const write = /\.(put|del)\(/.test(text);
      const mode = write ? out.mode : undefined;
      if (write) out.mode = undefined;
      if (mode === "never-sent") throw Object.assign(new Error("write CONNECTION_CLOSED"), { code: "CONNECTION_CLOSED" });
      const rows = await c.query(text, params, signal);
      if (mode === "lost-answer") throw Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
      return rows;
    },
  };
  return out;
}

Deno.test({
  name: "postgres: a write whose answer is lost is resolved by re-reading, never by writing again",
  ...opts,
  fn: async () => {
    let client!: ReturnType<typeof lossy>;
    const s = await pgStoreWith((c) => (client = lossy(c)));
    try {
      const r1 = await s.create("k", "v1");
      assert.deepEqual(r1, { ok: true, revision: 1 });
      // It landed; only the answer was lost: the re-read finds our value at a new revision.
      client.mode = "lost-answer";
      assert.deepEqual(await s.update("k", "v2", 1), { ok: true, revision: 2 });
      assert.deepEqual(await s.get("k"), { key: "k", value: "v2", revision: 2 });
      // It never reached the server, and the key already holds the same bytes: an outage, never ok.
      client.mode = "never-sent";
      await assert.rejects(s.update("k", "v2", 2), StoreUnavailableError);
      assert.deepEqual(await s.get("k"), { key: "k", value: "v2", revision: 2 });
      // A lost delete answer: gone now means done.
      client.mode = "lost-answer";
      assert.deepEqual(await s.delete("k", 2), { ok: true });
      assert.equal(await s.get("k"), undefined);
      // No second write happened anywhere: revisions 1..3 only.
      const log = await sqlOnce<{ n: number }>(
        `select count(*)::int as n from splitlease.log l join splitlease.jobs j on j.id = l.job where j.name = $1`,
        [s.job],
      );
      assert.equal(log[0].n, 3);
    } finally {
      await s.close();
    }
  },
});

Deno.test({
  name: "postgres: updateInTransaction commits the work's rows with the write, or neither",
  ...opts,
  fn: async () => {
    const s = await pgStore({ transactionIdleTimeoutMs: 400 });
    const table = `tx_${s.job}`;
    await sqlOnce(`create table ${table} (id int primary key, v text)`);
    try {
      const rows = () => sqlOnce<{ id: number; v: string }>(`select id, v from ${table} order by id`);
      const c = await s.create("p", "0");
      assert.ok(c.ok);
      // Landed: the rows and the record together.
      const r = await s.updateInTransaction("p", "1", c.revision, async (sql) => {
        await sql`insert into ${sql(table)} values (1, 'a'), (2, 'b')`;
      });
      assert.deepEqual(r, { ok: true, revision: 2 });
      assert.deepEqual((await rows()).map((x) => x.id), [1, 2]);
      // Lost compare-and-swap: the rows roll back with it.
      assert.deepEqual(await s.updateInTransaction("p", "zombie", c.revision, async (sql) => {
        await sql`insert into ${sql(table)} values (3, 'z')`;
        await sql`update ${sql(table)} set v = 'z' where id = 1`;
      }), { ok: false, conflict: true });
      assert.deepEqual(await rows(), [{ id: 1, v: "a" }, { id: 2, v: "b" }]);
      assert.deepEqual(await s.get("p"), { key: "p", value: "1", revision: 2 });
      // The work fails: nothing is written, its error comes back as it was.
      await assert.rejects(
        s.updateInTransaction("p", "2", 2, async (sql) => {
          await sql`insert into ${sql(table)} values (4, 'x')`;
          throw new RangeError("source bug");
        }),
        RangeError,
      );
      await assert.rejects(s.updateInTransaction("p", "2", 2, async (sql) => {
        await sql`insert into ${sql(table)} values (1, 'duplicate')`;
      }), (e) => !(e instanceof SplitleaseError) && (e as { code?: string }).code === "23505");
      assert.equal((await rows()).length, 2);
      assert.deepEqual(await s.get("p"), { key: "p", value: "1", revision: 2 });
      // A client frozen inside its transaction: the server ends it after transactionIdleTimeoutMs,
      // which frees its row locks for the next owner, and its rows roll back.
      let resume!: () => void;
      const frozen = s.updateInTransaction("p", "frozen", 2, async (sql) => {
        await sql`update ${sql(table)} set v = 'frozen' where id = 2`;
        await new Promise<void>((r) => (resume = r));
        await sql`insert into ${sql(table)} values (5, 'late')`;
      });
      frozen.catch(() => {});
      await until(() => resume !== undefined, 5000, "the frozen transaction");
      const t0 = Date.now();
      await sqlOnce(`update ${table} set v = 'next owner' where id = 2`);
      assert.ok(Date.now() - t0 < 5000, "the lock was freed by the idle timeout");
      resume();
      await assert.rejects(frozen, StoreUnavailableError);
      assert.deepEqual(await rows(), [{ id: 1, v: "a" }, { id: 2, v: "next owner" }]);
      assert.deepEqual(await s.get("p"), { key: "p", value: "1", revision: 2 });
      // And the store goes on.
      assert.deepEqual(await s.updateInTransaction("p", "3", 2, async (sql) => {
        await sql`insert into ${sql(table)} values (6, 'c')`;
      }), { ok: true, revision: 3 });
    } finally {
      await sqlOnce(`drop table if exists ${table}`);
      await s.close();
    }
  },
});

Deno.test({
  name: "postgres: least privilege: a role with only the documented grants runs the store on operator-made tables",
  ...opts,
  fn: async () => {
    const schema = `lp_${freshJob("").toLowerCase().replaceAll("-", "_")}`;
    const role = `${schema}_worker`;
    const nobody = `${schema}_nobody`;
    const { postgresGrantsSql, postgresSchemaSql } = await import("../../adapters/postgres.ts");
    await sqlOnce(postgresSchemaSql(schema));
    await sqlOnce(`create role ${role} login`);
    await sqlOnce(`create role ${nobody} login`);
    for (const g of postgresGrantsSql(role, schema).split(";").map((x) => x.trim()).filter(Boolean)) await sqlOnce(g);
    const as = (user: string) => PG_URL.replace(/^postgres:\/\/[^@]*@/, `postgres://${user}@`);
    try {
      const s = await PostgresStore.connect({ url: as(role), job: "lp", schema, createSchema: false, opTimeoutMs: 2000 });
      try {
        assert.deepEqual(await s.create("a", "1"), { ok: true, revision: 1 });
        assert.deepEqual(await s.update("a", "2", 1), { ok: true, revision: 2 });
        const w = s.watch("");
        const it = w[Symbol.asyncIterator]();
        assert.deepEqual(await take(it, 2), [{ type: "put", key: "a", value: "2", revision: 2 }, { type: "ready" }]);
        assert.deepEqual(await s.delete("a", 2), { ok: true });
        assert.deepEqual(await take(it, 1), [{ type: "delete", key: "a", revision: 3 }]);
        assert.deepEqual(await s.updateInTransaction("a", "x", 3, () => Promise.resolve()), { ok: true, revision: 4 });
        await w.stop();
      } finally {
        await s.close();
      }
      // A job the operator did not create, with createJob: false: named, not created.
      await assert.rejects(
        PostgresStore.connect({ url: as(role), job: "typo", schema, createSchema: false, createJob: false }),
        (e) => e instanceof SplitleaseError && e.code === "INVALID_CONFIG" && /no job "typo"/.test(e.message),
      );
      // Without the grants: refused at once, not retried as an outage.
      await assert.rejects(
        PostgresStore.connect({ url: as(nobody), job: "lp", schema, createSchema: false, connectWaitMs: 60_000 }),
        (e) => e instanceof SplitleaseError && e.code === "STORE_AUTH_FAILED",
      );
      // Tables missing and createSchema: false: named, not created.
      await assert.rejects(
        PostgresStore.connect({ url: as(role), job: "lp", schema: `${schema}_none`, createSchema: false }),
        (e) => e instanceof SplitleaseError && e.code === "INVALID_CONFIG" && /postgresSchemaSql/.test(e.message),
      );
    } finally {
      await sqlOnce(`drop schema if exists ${schema} cascade`);
      await sqlOnce(`drop role if exists ${role}`);
      await sqlOnce(`drop role if exists ${nobody}`);
    }
  },
});

Deno.test({
  name: "postgres: a schema of another version is refused; bad options are named",
  ...opts,
  fn: async () => {
    const schema = `v_${freshJob("").toLowerCase()}`;
    const s = await pgStore({ schema });
    await s.close();
    await sqlOnce(`update ${schema}.meta set version = 99`);
    try {
      await assert.rejects(
        pgStore({ schema }),
        (e) => e instanceof SplitleaseError && e.code === "INVALID_CONFIG" && /version 99.*newer splitlease/.test(e.message),
      );
    } finally {
      await sqlOnce(`drop schema ${schema} cascade`);
    }
    const bad = [
      [{ url: PG_URL, job: "j", opTimeoutMS: 5 }, /unknown option opTimeoutMS; did you mean opTimeoutMs\?/],
      [{ url: "mysql://x", job: "j" }, /url "mysql:\/\/x" is not a PostgreSQL URL: give postgres:\/\/ or postgresql:\/\//],
      [{ url: PG_URL, job: "a b" }, /job "a b" must be/],
      [{ url: PG_URL, job: "j", schema: "Bad-Name" }, /schema "Bad-Name" must be a plain lower-case/],
      [{ url: PG_URL, job: "j", poolSize: 0 }, /poolSize must be an integer/],
    ] as const;
    for (const [o, re] of bad) {
      await assert.rejects(PostgresStore.connect(o as never), (e) => e instanceof SplitleaseError && e.code === "INVALID_CONFIG" && re.test(e.message));
    }
  },
});

Deno.test({
  name: "postgres: exact-key watches listen on a small job and poll on a large one, switching without missing a change",
  ...opts,
  fn: async () => {
    // pollIntervalMs of a minute: only LISTEN or the key poll can deliver within the test's waits.
    const a = await pgStore({ pollIntervalMs: 60_000 });
    const b = await pgStore({ job: a.job });
    const w = a.watch("assign.x");
    const it = w[Symbol.asyncIterator]();
    try {
      assert.deepEqual((await take(it, 1, 3000)).map((e) => e.type), ["ready"]);
      const started = Date.now();
      const r1 = await b.create("assign.x", "1");
      assert.ok(r1.ok);
      assert.deepEqual(await take(it, 1, 1000), [{ type: "put", key: "assign.x", value: "1", revision: r1.revision }]);
      // 30 members: past 24, the next count (within 5 s) switches the watch to the key poll.
      for (let i = 0; i < 30; i++) assert.ok((await b.create(`member.m${i}`, "{}")).ok);
      let last = r1.revision;
      for (let round = 0; Date.now() - started < 7_000; round++) {
        const r = await b.update("assign.x", String(round + 2), last);
        assert.ok(r.ok);
        last = r.revision;
        const [e] = await take(it, 1, 1000);
        assert.deepEqual(e, { type: "put", key: "assign.x", value: String(round + 2), revision: r.revision }, `round ${round}`);
        await new Promise((res) => setTimeout(res, 200));
      }
      // And back: a small job again listens; a delete is told too.
      for (let i = 0; i < 30; i++) assert.ok((await b.delete(`member.m${i}`)).ok);
      await new Promise((res) => setTimeout(res, 5_500));
      const d = await b.delete("assign.x", last);
      assert.ok(d.ok);
      assert.deepEqual((await take(it, 1, 1000)).map((e) => e.type), ["delete"]);
    } finally {
      await w.stop();
      await a.close();
      await b.close();
    }
  },
});

Deno.test({
  name: "postgres: the job catalog lists each job's job, plan, leader and member records with write times, and removes a job's rows",
  ...opts,
  fn: async () => {
    const schema = `lj_${freshJob("").toLowerCase()}`;
    const a = await pgStore({ schema, job: "alpha" });
    const b = await pgStore({ schema, job: "beta" });
    try {
      const before = Date.now();
      await a.create("plan", JSON.stringify({ v: 2, term: 1, finality: "final", generation: 1, planned: 1, outcome: { kind: "allComplete", completed: 1 } }));
      await a.create("split.s1", "{}");
      await b.create("job", "{}");
      await b.create("member.w1", "{}");
      await b.create("member.w2", "{}");
      await b.delete("member.w2");
      await using catalog = await PostgresJobCatalog.connect({ url: PG_URL, schema, opTimeoutMs: 2000 });
      const jobs = await catalog.list();
      assert.deepEqual(
        jobs.map((j) => [j.job, j.record?.key, j.plan?.revision, j.leader, j.members.map((m) => m.key), j.bytes]),
        [["alpha", undefined, 1, undefined, [], null], ["beta", "job", undefined, undefined, ["member.w1"], null]],
        "the split is not read, the deleted member is not listed",
      );
      const written = jobs[0].plan!.writtenAt!;
      assert.ok(written >= before - 5_000 && written <= Date.now() + 5_000, `written at ${written}`);
      const [summary] = await listJobs(catalog, "alpha");
      assert.deepEqual([summary.job, summary.state, summary.finishedAt], ["alpha", "complete", written]);
      assert.deepEqual(await catalog.list("gamma"), []);
      assert.equal(await catalog.remove("alpha"), true);
      assert.equal(await catalog.remove("alpha"), false);
      assert.deepEqual((await catalog.list()).map((j) => j.job), ["beta"]);
      assert.deepEqual(await sqlOnce(`select count(*)::int as n from ${schema}.kv k where not exists (select 1 from ${schema}.jobs j where j.id = k.job)`), [{ n: 0 }]);
      await using none = await PostgresJobCatalog.connect({ url: PG_URL, schema: "no_such_schema" });
      assert.deepEqual(await none.list(), []);
      assert.equal(await none.remove("alpha"), false);
      await assert.rejects(
        PostgresJobCatalog.connect({ url: "postgres://postgres@127.0.0.1:1/test", opTimeoutMs: 300 }),
        (e) => e instanceof StoreUnavailableError,
      );
    } finally {
      await a.close();
      await b.close();
      await sqlOnce(`drop schema ${schema} cascade`);
    }
  },
});

Deno.test({
  name: "postgres: a store bound to one job is refused at join for another, naming both",
  ...opts,
  fn: async () => {
    const { SplitCoordinator } = await import("../../mod.ts");
    const s = await pgStore();
    try {
      await assert.rejects(
        SplitCoordinator.join({ store: s, job: "another", instance: "a" }),
        (e) => e instanceof SplitleaseError && e.code === "INVALID_CONFIG" && e.message.includes(s.job) && e.message.includes("another"),
      );
    } finally {
      await s.close();
    }
  },
});

Deno.test({
  name: "postgres: workers that open a new job at the same moment all join it (the insert that lost the race reads the winner's row)",
  ...opts,
  fn: async () => {
    const job = freshJob("race");
    await (await pgStore()).close(); // the schema exists
    // The race, made certain: another worker's insert of the job is not yet
    // committed when this connect's statement runs. Its insert waits for that
    // commit and does nothing; its select reads the snapshot from before it.
    const sql = postgres(PG_URL, { max: 1, onnotice: () => {} });
    let connecting: Promise<PostgresStore> | undefined;
    try {
      await sql.begin(async (tx) => {
        await tx.unsafe(`insert into splitlease.jobs (name) values ($1)`, [job]);
        connecting = pgStore({ job, opTimeoutMs: 5000 });
        connecting.catch(() => {});
        const deadline = Date.now() + 5000;
        for (;;) {
          const waiting = await sqlOnce(
            `select 1 from pg_stat_activity where application_name = $1 and wait_event_type = 'Lock'`,
            [`splitlease:${job}`],
          );
          if (waiting.length) break;
          if (Date.now() > deadline) throw new Error("the connect never waited for the other insert");
          await new Promise((r) => setTimeout(r, 20));
        }
      });
      const store = await connecting!;
      try {
        assert.equal((await store.create("k", "v")).ok, true);
        const [row] = await sqlOnce<{ n: number }>(`select count(*)::int as n from splitlease.jobs where name = $1`, [job]);
        assert.equal(row.n, 1, "one job row");
      } finally {
        await store.close();
      }
    } finally {
      await sql.end({ timeout: 1 });
    }
  },
});

Deno.test({
  name: "postgres: the LISTEN connection, once the server ends it, is connected again: changes come at notification latency, not at pollIntervalMs",
  ...opts,
  fn: async () => {
    const name = `lis${freshJob("")}`.slice(0, 50);
    const lost: Record<string, unknown>[] = [];
    // A poll of a minute: within this test's waits, only a notification (or the wake-up of every
    // watch when the listener is back) can deliver a change.
    const watcher = await pgStore({
      pollIntervalMs: 60_000,
      applicationName: name,
      logger: (_level, _message, fields) => fields?.event === "storeListenLost" && void lost.push(fields),
    });
    const writer = await pgStore({ job: watcher.job });
    const w = watcher.watch("k.");
    const it = w[Symbol.asyncIterator]();
    const listeners = () => sqlOnce<{ pid: number; query: string }>(`select pid, query from pg_stat_activity where application_name = $1`, [`${name}:listen`]);
    try {
      assert.deepEqual((await take(it, 1)).map((e) => e.type), ["ready"]);
      const put = async (key: string) => {
        const r = await writer.create(key, key);
        assert.ok(r.ok);
        return { type: "put", key, value: key, revision: r.revision };
      };
      const first = await put("k.1");
      assert.deepEqual(await take(it, 1, 2000), [first]);
      const [before] = await listeners();
      assert.ok(before, "the store listens on a connection of its own");
      assert.equal(await terminateConnections(`${name}:listen`), 1);
      // A change right after the loss: told once the listener is back, which wakes every watch.
      const second = await put("k.2");
      assert.deepEqual(await take(it, 1, 10_000), [second], "delivered after the listener came back, not at the next poll");
      // Listening again on a new connection (waited for as a user would: until a deadline).
      const deadline = Date.now() + 10_000;
      for (;;) {
        const now = await listeners();
        if (now.some((l) => l.pid !== before.pid && /^listen /.test(l.query))) break;
        assert.ok(Date.now() < deadline, `no new listener: ${JSON.stringify(now)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      // So a change now comes by its notification, within notification latency.
      const third = await put("k.3");
      assert.deepEqual(await take(it, 1, 2000), [third], "woken by NOTIFY on the new connection");
      assert.equal(lost.length, 1, "the loss was logged");
    } finally {
      await w.stop();
      await watcher.close();
      await writer.close();
    }
  },
});

/** Values that end a naive dollar quote early, quotes, backslashes, and Unicode beyond the BMP (no NUL: text cannot hold it). */
const ADVERSARIAL = [
  "$sl", "$sl$", "$sl0$", "x$sl", "x$sl$", "$sl$sl0$", "$sl0", "$sl0$sl", "$sl$$sl0$$sl1$$sl2$", "$sl9$", "$sl10$",
  "$", "$$", "$$$", "'", "''", "\\", "\\\\'", "E'\\x41'", "\"", "$sl$'); select 1; --", "a$sl$b$sl0$c",
  "ü日本🦀\u2028\u2029\r\n\t", "\u{10FFFF}", "{\"k\":\"$sl$\"}",
];
/** Strings over an alphabet dense in the pieces of the tag (`$`, `s`, `l`, digits), quotes and backslashes. */
const tagLike = fc.string({ unit: fc.constantFrom("$", "s", "l", "0", "1", "9", "'", "\\", "\"", ";", "ü", "🦀", "\n", " "), maxLength: 24 });
const anyText = fc.string({ unit: "binary", maxLength: 40 }).filter((s) => !s.includes("\u0000"));

Deno.test({
  name: "postgres: values that contain or end in the dollar-quote tag, quotes, backslashes and Unicode round-trip through every inlined literal, transactional commits included",
  ...opts,
  fn: async () => {
    // The literal itself, read back by the server.
    const values = [...ADVERSARIAL, ...fc.sample(tagLike, 400), ...fc.sample(anyText, 200)];
    const rows = await sqlOnce(`select ${values.map((v, i) => `${literal(v)} as v${i}`).join(", ")}`);
    assert.deepEqual(values.map((_, i) => rows[0][`v${i}`]), values);
    // A transactional commit inlines the key, the value and the channels: each value lands as it was,
    // the watch and a read see it unchanged, and the work's rows commit with it.
    const s = await pgStore();
    const table = `lit_${s.job}`;
    await sqlOnce(`create table ${table} (n int primary key, v text)`);
    const w = s.watch("p");
    const it = w[Symbol.asyncIterator]();
    try {
      assert.deepEqual((await take(it, 1)).map((e) => e.type), ["ready"]);
      const c = await s.create("p", "start");
      assert.ok(c.ok);
      await take(it, 1);
      let at = c.revision;
      const committed = [...ADVERSARIAL, ...fc.sample(tagLike, 60), ...fc.sample(anyText, 30)];
      for (const [n, v] of committed.entries()) {
        const r = await s.updateInTransaction("p", v, at, async (sql) => {
          await sql`insert into ${sql(table)} values (${n}, ${v})`;
        });
        assert.ok(r.ok, `value ${JSON.stringify(v)}: ${JSON.stringify(r)}`);
        at = r.revision;
        assert.deepEqual(await s.get("p"), { key: "p", value: v, revision: at }, JSON.stringify(v));
        assert.deepEqual(await take(it, 1), [{ type: "put", key: "p", value: v, revision: at }], JSON.stringify(v));
      }
      const sunk = await sqlOnce<{ v: string }>(`select v from ${table} order by n`);
      assert.deepEqual(sunk.map((x) => x.v), committed);
    } finally {
      await w.stop();
      await s.close();
      await sqlOnce(`drop table if exists ${table}`);
    }
  },
});
