// Repairing a record by hand in SQL (docs/OPERATIONS.md, "Repairing a
// record in SQL"): the store's watches read changes by revision, so a row
// rewritten in place (an UPDATE of kv) is never seen by a leader that read
// the record as garbage; the documented repair goes through the store's
// write function, which gives the record a new revision and a change in the
// log, and the leader picks it up at its next poll.
import assert from "node:assert/strict";
import { SplitCoordinator } from "../../mod.ts";
import { noPg, pgStore, sqlOnce } from "../helpers/pg.ts";
import { finalPlanner, Member, splits } from "../coordinator/fleet.ts";
import { REAL_TIMINGS } from "../coordinator/real_backend.ts";

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(cond: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    assert.ok(Date.now() < end, `timed out waiting for ${what}`);
    await delay(20);
  }
}

Deno.test({
  name: "postgres: a split record repaired in SQL is re-read by the leader that read it as garbage only when the repair takes a new revision (the store's put function)",
  sanitizeOps: false,
  sanitizeResources: false,
  ignore: noPg,
  fn: async () => {
    const store = await pgStore({ opTimeoutMs: REAL_TIMINGS.opTimeoutMs, pollIntervalMs: 250 });
    const raw = await pgStore({ job: store.job });
    // One lane: s000 is held, s001 and s002 wait.
    const a = new Member(await SplitCoordinator.join({ store, job: store.job, instance: "a", planner: finalPlanner(splits(3)), ...REAL_TIMINGS, maxInFlight: 1 }));
    try {
      await until(() => a.held.length === 1 && a.c.status().counts.unclaimed === 2, 5000, "the plan, one split held");
      const [waiting] = ["s001", "s002"].filter((id) => !a.held.includes(id));
      const key = `split.${waiting}`;
      // A split not dealt yet has no record (its claim creates it): give it the record a freed split has.
      const good = (await raw.get(key)) ?? await (async () => {
        const c = await raw.create(key, JSON.stringify({ v: 2, epoch: 0, status: "runnable", owner: null, attempts: 0, weight: 1, progress: null, descriptor: { n: Number(waiting.slice(1)) }, closed: 1 }));
        assert.ok(c.ok);
        return (await raw.get(key))!;
      })();
      // A waiting split's record turns to garbage (a bad hand edit, another tool).
      const garbage = await raw.update(key, "{garbage", good.revision);
      assert.ok(garbage.ok);
      await until(() => a.c.status().invalidRecords.some((r) => r.key === key), 5000, "the leader to read it as garbage");
      const job = `(select id from splitlease.jobs where name = '${store.job}')`;

      // Rewritten in place: the row holds the good value again at the garbage's revision. No watch
      // reads a revision it has read already, so the leader never sees it (8 polls here).
      await sqlOnce(`update splitlease.kv set value = $1 where job = ${job} and key = $2`, [good.value, key]);
      assert.deepEqual(await raw.get(key), { key, value: good.value, revision: garbage.revision }, "the row is repaired, at the garbage's revision");
      await delay(8 * 250);
      assert.ok(a.c.status().invalidRecords.some((r) => r.key === key), "still garbage to the leader");

      // The documented repair: the store's put, a compare-and-swap at the record's current revision,
      // with no channels to notify (watches read it at their next poll).
      const [put] = await sqlOnce<{ r: string | null }>(
        `select splitlease.put(j.id, k.key, $1, k.revision, '', false)::text as r
           from splitlease.jobs j join splitlease.kv k on k.job = j.id and k.key = $2 where j.name = $3`,
        [good.value, key, store.job],
      );
      assert.ok(Number(put.r) > garbage.revision, `landed at a new revision (${put.r})`);
      await until(() => !a.c.status().invalidRecords.some((r) => r.key === key), 5000, "the leader to read the repaired record");

      // And the job runs to its end: each split is completed by the one lane in turn.
      const done = new Set<string>();
      await until(() => {
        for (const h of a.c.status().held) {
          if (done.has(h.id)) continue;
          done.add(h.id);
          void a.c.commit(h.id, h.epoch, { watermark: 1 }, { final: true }).catch(() => done.delete(h.id));
        }
        return a.has("allComplete");
      }, 15_000, "allComplete");
      assert.deepEqual([...done].sort(), ["s000", "s001", "s002"]);
    } finally {
      await a.c.abandon();
      await store.close();
      await raw.close();
    }
  },
});
