// PostgreSQL as it is deployed: a server that takes TLS connections only
// (managed offerings require TLS), reached with `sslmode=verify-full` and a CA
// this test makes, and PgBouncer (Debian's, which `npm test` installs) in
// transaction mode in front of it, with `listenUrl` a direct session.
// Through PgBouncer: watches (by notification with listenUrl, by polling
// without), exactly-once transactional commits, a client frozen inside its
// transaction, server connections terminated and PgBouncer killed and
// restarted, and a fleet committing its rows with its progress through all
// of that.
import assert from "node:assert/strict";
import postgres from "postgres";
import { FencedError, SplitCoordinator, SplitleaseError, StoreUnavailableError } from "../../mod.ts";
import { PostgresJobCatalog, PostgresStore, type PostgresStoreOptions, type PgTransaction } from "../../adapters/postgres.ts";
import type { WatchEvent } from "../../store.ts";
import { SplitRecordSchema } from "../../src/records.ts";
import { makeCertificates } from "../helpers/certs.ts";
import { noPg } from "../helpers/pg.ts";
import { PgServer } from "../helpers/pg_server.ts";
import { PgBouncer, pgBouncerBin } from "../helpers/pgbouncer.ts";
import { take } from "../store/conformance.ts";
import { finalPlanner, splits } from "../coordinator/fleet.ts";

const noBouncer = pgBouncerBin() === undefined;
if (!noPg && noBouncer) console.warn("PgBouncer is missing (npm test installs it as root): the PgBouncer cases are ignored");
const opts = { sanitizeOps: false, sanitizeResources: false, ignore: noPg };
const bouncerOpts = { ...opts, ignore: noPg || noBouncer };
const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `url` with a query string for TLS verified against `ca`. */
const verified = (url: string, ca: string) => `${url}?sslmode=verify-full&sslrootcert=${encodeURIComponent(ca)}`;

/**
 * A CA and a server certificate it signed (for localhost and 127.0.0.1), a
 * second CA that signed nothing of this server's, and a PostgreSQL that
 * takes TLS connections only (pg_hba: hostssl, and hostnossl rejected).
 */
async function tlsServer(): Promise<{ server: PgServer; ca: string; otherCa: string; url: string } & AsyncDisposable> {
  const dir = await Deno.makeTempDir({ prefix: "splitlease-pgtls-" });
  const disposeDir = () => Deno.remove(dir, { recursive: true }).catch(() => {});
  try {
    await makeCertificates(dir);
    await Deno.mkdir(`${dir}/other`);
    await makeCertificates(`${dir}/other`);
    if (Deno.uid?.() === 0) {
      const id = (flag: string) => Number(new TextDecoder().decode(new Deno.Command("id", { args: [flag, "postgres"] }).outputSync().stdout).trim());
      for (const f of ["tls.key", "tls.crt"]) await Deno.chown(`${dir}/tls/${f}`, id("-u"), id("-g"));
    }
    await Deno.chmod(`${dir}/tls/tls.key`, 0o600);
    await Deno.chmod(dir, 0o755);
    const server = await PgServer.start(
      { ssl: "on", ssl_cert_file: `'${dir}/tls/tls.crt'`, ssl_key_file: `'${dir}/tls/tls.key'` },
      { hba: "local all all trust\nhostssl all all 127.0.0.1/32 trust\nhostnossl all all 0.0.0.0/0 reject\n" },
    );
    const ca = `${dir}/tls/ca.crt`;
    return {
      server,
      ca,
      otherCa: `${dir}/other/tls/ca.crt`,
      url: verified(server.url, ca),
      async [Symbol.asyncDispose]() {
        await server[Symbol.asyncDispose]();
        await disposeDir();
      },
    };
  } catch (e) {
    await disposeDir();
    throw e;
  }
}

/** The TLS-only server with PgBouncer in transaction mode in front of it (TLS to the server, verified), a few server connections for many clients. */
async function bounced(): Promise<{ tls: Awaited<ReturnType<typeof tlsServer>>; bouncer: PgBouncer; admin: postgres.Sql } & AsyncDisposable> {
  const tls = await tlsServer();
  try {
    const bouncer = await PgBouncer.start({
      serverPort: tls.server.port,
      poolMode: "transaction",
      poolSize: 4,
      settings: { server_tls_sslmode: "verify-full", server_tls_ca_file: tls.ca },
    });
    const admin = postgres(tls.url, { max: 2, onnotice: false, fetch_types: false });
    return {
      tls,
      bouncer,
      admin,
      async [Symbol.asyncDispose]() {
        await admin.end({ timeout: 1 });
        await bouncer[Symbol.asyncDispose]();
        await tls[Symbol.asyncDispose]();
      },
    };
  } catch (e) {
    await tls[Symbol.asyncDispose]();
    throw e;
  }
}

let seq = 0;
/**
 * A store through PgBouncer as docs/OPERATIONS.md says to configure it for
 * transaction mode: no prepared statements (PgBouncer 1.18), no pipelining,
 * listenUrl a direct session.
 */
function bouncerStore(env: Awaited<ReturnType<typeof bounced>>, o: Partial<PostgresStoreOptions> = {}): Promise<PostgresStore> {
  return PostgresStore.connect({
    url: env.bouncer.url,
    listenUrl: env.tls.url,
    prepare: false,
    pipeline: false,
    job: `d${Date.now().toString(36)}${seq++}`,
    opTimeoutMs: 1000,
    logger: () => {},
    ...o,
  });
}

Deno.test({
  name: "postgres deployed: TLS with sslmode=verify-full against the test's CA; a wrong CA, no CA and no TLS are refused at once naming the cause",
  ...opts,
  fn: async () => {
    await using tls = await tlsServer();
    const name = "tls-under-test";
    const store = await PostgresStore.connect({ url: tls.url, job: "tls", opTimeoutMs: 1000, applicationName: name, pollIntervalMs: 60_000, logger: () => {} });
    const other = await PostgresStore.connect({ url: tls.url, job: "tls", opTimeoutMs: 1000, logger: () => {} });
    try {
      const w = store.watch("k.");
      const it = w[Symbol.asyncIterator]();
      assert.deepEqual((await take(it, 1)).map((e) => e.type), ["ready"]);
      const r = await other.create("k.a", "1");
      assert.ok(r.ok);
      assert.deepEqual(await take(it, 1, 2000), [{ type: "put", key: "k.a", value: "1", revision: r.revision }], "by notification over TLS");
      assert.deepEqual(await store.updateInTransaction("k.a", "2", r.revision, () => Promise.resolve()), { ok: true, revision: r.revision + 1 });
      // Every connection of the store (statements, LISTEN, transactions) is encrypted.
      const conns = await tls.server.psql(
        "test",
        `select string_agg(a.application_name || '=' || s.ssl, ',' order by a.application_name) from pg_stat_activity a join pg_stat_ssl s using (pid) where a.application_name like '${name}%'`,
      );
      assert.deepEqual(new Set(conns.split(",")), new Set([`${name}=true`, `${name}:listen=true`, `${name}:tx=true`]), conns);
      await w.stop();
    } finally {
      await store.close();
      await other.close();
    }
    const refusedAtOnce = async (url: string, cause: RegExp) => {
      const t0 = Date.now();
      for (const connect of [() => PostgresStore.connect({ url, job: "tls", connectWaitMs: 30_000, logger: () => {} }), () => PostgresJobCatalog.connect({ url })]) {
        await assert.rejects(connect(), (e) => {
          assert.ok(e instanceof SplitleaseError, String(e));
          assert.equal(e.code, "STORE_AUTH_FAILED", e.message);
          assert.match(e.message, cause);
          return true;
        });
      }
      assert.ok(Date.now() - t0 < 5000, `refused at once, not retried for connectWaitMs (${Date.now() - t0} ms)`);
    };
    // Signed by another CA, or checked against the system's CAs only: the certificate is not trusted.
    const untrusted = /the TLS connection to 127\.0\.0\.1:\d+\/test failed: unable to verify the first certificate \(UNABLE_TO_VERIFY_LEAF_SIGNATURE\): .*sslrootcert/;
    await refusedAtOnce(verified(tls.server.url, tls.otherCa), untrusted);
    await refusedAtOnce(`${tls.server.url}?sslmode=verify-full`, untrusted);
    // Without TLS: the server's own refusal, as it words it.
    await refusedAtOnce(tls.server.url, /pg_hba\.conf rejects connection .*no encryption/);
  },
});

Deno.test({
  name: "postgres deployed: behind PgBouncer in transaction mode with listenUrl direct: watches by notification, exactly-once transactional commits, a frozen transaction ended, server connections and PgBouncer killed",
  ...bouncerOpts,
  fn: async () => {
    await using env = await bounced();
    const warnings: string[] = [];
    const a = await bouncerStore(env, { pollIntervalMs: 60_000, transactionIdleTimeoutMs: 500, logger: (level, m) => level === "warn" && void warnings.push(m) });
    const b = await bouncerStore(env, { job: a.job });
    const table = `eo_${a.job}`;
    await env.admin.unsafe(`create table ${table} (id int primary key, by text, copies int not null default 1)`);
    try {
      // Watches: a change comes by its notification on the direct listener (the poll is a minute).
      const w = a.watch("k.");
      const it = w[Symbol.asyncIterator]();
      assert.deepEqual((await take(it, 1)).map((e) => e.type), ["ready"]);
      const c = await b.create("k.x", "0");
      assert.ok(c.ok);
      assert.deepEqual(await take(it, 1, 2000), [{ type: "put", key: "k.x", value: "0", revision: c.revision }]);

      // Exactly once: 8 stores race transactional commits on one key, each writing its rows; only
      // a commit that won its compare-and-swap keeps its rows, whatever server connection ran it.
      const racers = await Promise.all(Array.from({ length: 8 }, () => bouncerStore(env, { job: a.job })));
      let won = 0;
      try {
        await Promise.all(racers.map(async (s, i) => {
          for (let round = 0; round < 6; round++) {
            const at = await s.get("k.x");
            const id = i * 100 + round;
            const r = await s.updateInTransaction("k.x", `s${i}r${round}`, at!.revision, async (sql) => {
              await sql`insert into ${sql(table)} (id, by) values (${id}, ${`s${i}r${round}`})`;
            });
            if (r.ok) won++;
          }
        }));
      } finally {
        await Promise.all(racers.map((s) => s.close()));
      }
      assert.ok(won >= 6, `${won} commits won`);
      const rows = await env.admin.unsafe<{ by: string }[]>(`select by from ${table} where id >= 0`);
      assert.equal(rows.length, won, "the rows of the commits that won, and only those");
      const final = await a.get("k.x");
      assert.ok(rows.some((x) => x.by === final!.value), "the record's value came with its rows");
      // The watch saw every committed value, in order.
      const seen = await take(it, won, 10_000);
      assert.deepEqual(seen.map((e) => (e as { value: string }).value).sort(), rows.map((x) => x.by).sort());
      assert.ok(warnings.some((m) => /refused the transaction connections' session settings/.test(m)), "the refused startup settings were said");

      // A client frozen inside its transaction through PgBouncer: the server still ends it after
      // transactionIdleTimeoutMs (set local, since PgBouncer refuses the session setting), which
      // frees its row locks and the server connection for everyone else.
      let resume!: () => void;
      await env.admin.unsafe(`insert into ${table} (id, by) values (-1, 'locked')`);
      const at = await a.get("k.x");
      const frozen = a.updateInTransaction("k.x", "frozen", at!.revision, async (sql) => {
        await sql`update ${sql(table)} set copies = copies + 1 where id = ${-1}`;
        await new Promise<void>((r) => (resume = r));
      });
      frozen.catch(() => {});
      const deadline = Date.now() + 5000;
      while (resume === undefined) {
        assert.ok(Date.now() < deadline, "the frozen transaction started");
        await delay(10);
      }
      const t0 = Date.now();
      await env.admin.unsafe(`update ${table} set by = 'next owner' where id = -1`);
      const waited = Date.now() - t0;
      assert.ok(waited >= 200 && waited < 4000, `the row lock was held, then freed by the idle timeout (waited ${waited} ms)`);
      resume();
      await assert.rejects(frozen, StoreUnavailableError);
      assert.deepEqual((await a.get("k.x"))?.value, at!.value, "the frozen commit did not land");

      // Every server connection (PgBouncer's and the direct listener) terminated: the stores go on.
      const ended = await env.admin.unsafe<{ n: number }[]>(
        `select count(pg_terminate_backend(pid))::int as n from pg_stat_activity where datname = 'test' and pid <> pg_backend_pid() and backend_type = 'client backend'`,
      );
      assert.ok(ended[0].n >= 2, `${ended[0].n} server connections ended`);
      const after = await retried(() => b.update("k.x", "after-terminate", at!.revision));
      assert.ok(after.ok);
      assert.deepEqual(await take(it, 1, 10_000), [{ type: "put", key: "k.x", value: "after-terminate", revision: after.revision }]);

      // PgBouncer killed and started again: statements fail meanwhile, then resume; the watch,
      // on its direct listener, is not reset and misses nothing.
      await env.bouncer.kill();
      await assert.rejects(b.create("k.during", "x"), StoreUnavailableError);
      await env.bouncer.restart();
      const back = await retried(() => b.create("k.after", "1"));
      assert.ok(back.ok);
      const tail = await take(it, 1, 10_000);
      assert.deepEqual(tail, [{ type: "put", key: "k.after", value: "1", revision: back.revision }]);
      assert.deepEqual(await retried(() => a.updateInTransaction("k.after", "2", back.revision, async (sql) => {
        await sql`insert into ${sql(table)} (id, by) values (${9999}, ${"after restart"})`;
      })), { ok: true, revision: back.revision + 1 });
      await w.stop();
    } finally {
      await a.close();
      await b.close();
      await env.admin.unsafe(`drop table if exists ${table}`);
    }
  },
});

/** `f` retried while the store is unavailable (a user's code waiting out an outage), for up to 15 s. */
async function retried<T>(f: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      return await f();
    } catch (e) {
      if (!(e instanceof StoreUnavailableError) || Date.now() > deadline) throw e;
      await delay(100);
    }
  }
}

Deno.test({
  name: "postgres deployed: behind PgBouncer without listenUrl, watches fall back to polling and miss nothing",
  ...bouncerOpts,
  fn: async () => {
    await using env = await bounced();
    // LISTEN through transaction pooling lands on a server connection that others get next:
    // notifications do not come back, so changes arrive by the poll.
    const a = await bouncerStore(env, { listenUrl: undefined, pollIntervalMs: 300 });
    const b = await bouncerStore(env, { listenUrl: undefined, job: a.job });
    try {
      const w = a.watch("");
      const events: WatchEvent[] = [];
      void (async () => {
        for await (const e of w) events.push(e);
      })();
      const until = async (cond: () => boolean, ms: number, what: string) => {
        const end = Date.now() + ms;
        while (!cond()) {
          assert.ok(Date.now() < end, `timed out waiting for ${what}: ${JSON.stringify(events)}`);
          await delay(10);
        }
      };
      await until(() => events.some((e) => e.type === "ready"), 5000, "ready");
      const revisions: number[] = [];
      for (let i = 0; i < 10; i++) {
        const r = await b.create(`k${i}`, String(i));
        assert.ok(r.ok);
        revisions.push(r.revision);
        // Within a poll or two, every time.
        await until(() => events.some((e) => e.type === "put" && e.revision === r.revision), 300 * 3 + 1500, `revision ${r.revision}`);
      }
      assert.deepEqual(events.filter((e) => e.type === "put").map((e) => (e as { revision: number }).revision), revisions);
      assert.equal(events.filter((e) => e.type === "reset").length, 0);
      await w.stop();
    } finally {
      await a.close();
      await b.close();
    }
  },
});

Deno.test({
  name: "postgres deployed: a fleet behind PgBouncer commits its rows with its progress through terminated server connections and a PgBouncer restart: every row exactly once",
  ...bouncerOpts,
  fn: async () => {
    await using env = await bounced();
    const job = `fleet${Date.now().toString(36)}`;
    const sink = `sink_${job}`;
    await env.admin.unsafe(`create table ${sink} (id int primary key, copies int not null default 1)`);
    const SPLITS = 12;
    const BATCHES = 5;
    const stores: PostgresStore[] = [];
    const members: SplitCoordinator[] = [];
    const errors: unknown[] = [];
    const complete: boolean[] = [];
    try {
      for (let i = 0; i < 3; i++) stores.push(await retried(() => bouncerStore(env, { job, opTimeoutMs: 1000 })));
      const plan = finalPlanner(splits(SPLITS));
      for (const [i, store] of stores.entries()) {
        members.push(
          await SplitCoordinator.join({
            store,
            job,
            instance: `m${i}`,
            planner: plan,
            leaseMs: 3000,
            opTimeoutMs: 1000,
            maxInFlight: 3,
            logger: () => {},
          }),
        );
      }
      const runs: Promise<void>[] = [];
      const runSplit = async (c: SplitCoordinator, id: string, epoch: number, from: number) => {
        const n = Number(id.slice(1));
        for (let k = from; k < BATCHES; k++) {
          for (;;) {
            try {
              await c.commit(id, epoch, { watermark: k + 1 }, {
                final: k + 1 === BATCHES,
                records: 10,
                transaction: async (sql: PgTransaction) => {
                  await sql`insert into ${sql(sink)} (id) select g from generate_series(${n * 1000 + k * 10}::int, ${n * 1000 + k * 10 + 9}::int) g
                            on conflict (id) do update set copies = ${sql(sink)}.copies + 1`;
                },
              });
              break;
            } catch (e) {
              if (e instanceof FencedError) return; // lost it: its next owner resumes from the record
              if (e instanceof StoreUnavailableError) {
                await delay(100);
                continue;
              }
              errors.push(e);
              return;
            }
          }
          await delay(40);
        }
      };
      members.forEach((c, i) => {
        runs.push((async () => {
          for await (const ev of c) {
            if (ev.type === "gained") runs.push(runSplit(c, ev.split.id, ev.epoch, Number(ev.progress?.watermark ?? 0)));
            if (ev.type === "allComplete") {
              complete[i] = true;
              return;
            }
          }
        })());
      });
      const count = async () => Number((await env.admin.unsafe<{ n: number }[]>(`select count(*)::int as n from ${sink}`))[0].n);
      const reach = async (n: number) => {
        const end = Date.now() + 60_000;
        while ((await count()) < n) {
          assert.ok(Date.now() < end, `${n} rows copied`);
          await delay(50);
        }
      };
      // Faults while it runs: every server connection terminated, then PgBouncer killed and started again.
      await reach(SPLITS * BATCHES * 10 * 0.2);
      await env.admin.unsafe(`select pg_terminate_backend(pid) from pg_stat_activity where datname = 'test' and pid <> pg_backend_pid() and backend_type = 'client backend'`);
      await reach(SPLITS * BATCHES * 10 * 0.5);
      await env.bouncer.kill();
      await delay(500);
      await env.bouncer.restart();
      const end = Date.now() + 90_000;
      while (complete.filter(Boolean).length < members.length) {
        assert.ok(Date.now() < end, `every member saw the job complete (${complete})`);
        await delay(50);
      }
      assert.deepEqual(errors, []);
      const [dst] = await env.admin.unsafe<{ n: number; dups: number }[]>(`select count(*)::int as n, (sum(copies) - count(*))::int as dups from ${sink}`);
      assert.equal(dst.n, SPLITS * BATCHES * 10, "every row");
      assert.equal(dst.dups, 0, "no row written twice");
      const records = (await stores[0].list("split.")).map((e) => SplitRecordSchema.parse(JSON.parse(e.value)));
      assert.equal(records.length, SPLITS);
      for (const r of records) assert.equal(r.status, "completed");
    } finally {
      for (const c of members) await c.abandon().catch(() => {});
      for (const s of stores) await s.close();
      await env.admin.unsafe(`drop table if exists ${sink}`);
    }
  },
});
