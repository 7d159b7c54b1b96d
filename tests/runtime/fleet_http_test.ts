// The fleet routes of the HTTP app, in process (app.request, no sockets) on
// MemoryStore: GET /fleet paging and filters, liveness judged by the leader
// on the leader (records with no beat time are not judged elsewhere), the operator actions behind the drain token with an answer for
// every state, cross-site refusal, and the page's headers.
import assert from "node:assert/strict";
import { createApp } from "../../host.ts";
import { failRecord, seedRecord } from "../../src/records/transitions.ts";
import type { SplitRecord } from "../../admin.ts";
import { StoreUnavailableError, MemoryStore } from "../../mod.ts";
import { JobGoneError } from "../../src/errors.ts";
import type { Store } from "../../mod.ts";
import { ScriptedCoordinator } from "../helpers/scripted_coordinator.ts";

const TOKEN = "op-s3cret";
const auth = { authorization: `Bearer ${TOKEN}` };
const w1 = { instance: "w1", session: "s1" };

function poisoned(): SplitRecord {
  let r = seedRecord(1, { file: "bad.ndjson" });
  for (let i = 0; i < 4; i++) r = failRecord({ ...r, owner: w1 }, `parse error at line ${7 + i}`, 4, "w1", 1_700_000_000_000 + i);
  return r;
}

async function seed(store: Store, n = 30): Promise<void> {
  await store.create("job", JSON.stringify({ v: 3, fingerprint: "fp", createdAt: 0 }));
  await store.create("plan", JSON.stringify({ v: 2, term: 2, finality: "final", generation: 1, planned: n }));
  await store.create("leader", JSON.stringify({ v: 2, instance: "w1", session: "s1", term: 2, beat: 9 }));
  await store.create("member.w1", JSON.stringify({ v: 2, session: "s1", maxInFlight: 4, runtime: "deno", version: "0.2.0", beat: 9 }));
  await store.create("member.w2", JSON.stringify({ v: 2, session: "s2", maxInFlight: 4, runtime: "bun", version: "0.2.0", beat: 3 }));
  for (let i = 0; i < n; i++) {
    const id = `s${String(i).padStart(3, "0")}`;
    let r: SplitRecord = seedRecord(1, { n: i });
    if (i < 4) r = { ...r, owner: w1, epoch: 1, progress: { watermark: i * 10 } };
    else if (i < 10) r = { ...r, status: "completed" };
    else if (i === 10 || i === 11) r = poisoned();
    await store.create(`split.${id}`, JSON.stringify(r));
  }
}

async function setup(opts: { drainToken?: string; drainOpen?: boolean; leader?: boolean } = { drainToken: TOKEN }) {
  const store = new MemoryStore();
  await seed(store);
  const coordinator = new ScriptedCoordinator("w1");
  coordinator.isLeader = opts.leader ?? false;
  const app = createApp({ coordinator, store, drainToken: opts.drainToken, drainOpen: opts.drainOpen });
  const get = async (path: string) => {
    const res = await app.request(path);
    return { status: res.status, body: await res.json() };
  };
  const post = async (path: string, headers: Record<string, string> = auth) => {
    const res = await app.request(path, { method: "POST", headers });
    return { status: res.status, body: await res.json() };
  };
  return { store, app, get, post, coordinator };
}

Deno.test("fleet http: GET /fleet shows members, counts and a filtered page; off the leader, records without a beat time are not judged", async () => {
  const { get, store } = await setup();
  const { status, body } = await get("/fleet?state=quarantined");
  assert.equal(status, 200);
  assert.equal(body.job, "job1");
  assert.deepEqual(body.servedBy, { instance: "w1", isLeader: false });
  assert.deepEqual(body.liveness, { judgedBy: "clock", leader: "w1" });
  assert.deepEqual(body.members.map((m: { instance: string; alive: unknown; beat: number; owned: number }) => [m.instance, m.alive, m.beat, m.owned]), [
    ["w1", null, 9, 4],
    ["w2", null, 3, 0],
  ]);
  assert.deepEqual(
    [body.counts.total, body.counts.owned, body.counts.unowned, body.counts.completed, body.counts.quarantined],
    [30, 4, 18, 6, 2],
  );
  assert.deepEqual(body.splits.map((s: { id: string }) => s.id), ["s010", "s011"]);
  assert.equal(body.splits[0].failures.length, 4);
  assert.equal(body.splits[0].failures[3].message, "parse error at line 10");
  assert.equal(body.splits[0].descriptor, '{"file":"bad.ndjson"}');
  const owned = await get("/fleet?owner=w1&state=runnable,quarantined");
  assert.deepEqual(owned.body.splits.map((s: { id: string }) => s.id), ["s000", "s001", "s002", "s003"]);
  // Paging: limit and cursor.
  const p1 = await get("/fleet?limit=12");
  assert.equal(p1.body.splits.length, 12);
  assert.equal(p1.body.page.next, "s011");
  const p3 = await get(`/fleet?limit=12&after=s023`);
  assert.deepEqual(p3.body.splits.map((s: { id: string }) => s.id), ["s024", "s025", "s026", "s027", "s028", "s029"]);
  assert.equal(p3.body.page.next, null);
  // Bad queries: 400 naming the field; no listing made.
  for (const q of ["state=done", "limit=0", "limit=abc", "owner=a%20b", "after=..%2F"]) {
    const r = await get(`/fleet?${q}`);
    assert.equal(r.status, 400, q);
    assert.match(r.body.error, /^Fleet query: /, q);
  }
  // A store that does not answer: 503 naming it.
  const down = createApp({
    coordinator: new ScriptedCoordinator(),
    store: new Proxy(store, {
      get: (t, p) => {
        if (p === "list") return () => Promise.reject(new StoreUnavailableError("list", 5000));
        const v = Reflect.get(t, p);
        return typeof v === "function" ? v.bind(t) : v;
      },
    }),
  });
  const res = await down.request("/fleet");
  assert.equal(res.status, 503);
  assert.match((await res.json()).error, /the store did not answer: /);
});

Deno.test("fleet http: GET /fleet of a job whose records were deleted answers 410 gone, not a view of nothing (issue 40, item 6)", async () => {
  const { get, store } = await setup();
  assert.equal((await get("/fleet")).status, 200);
  for (const filter of ["job", "plan", "leader", "member.", "split."]) {
    for (const e of await store.list(filter)) await store.delete(e.key);
  }
  await new Promise((r) => setTimeout(r, 1100)); // past the one-second snapshot cache
  const { status, body } = await get("/fleet");
  assert.equal(status, 410);
  assert.deepEqual(body, { error: 'job "job1" is gone: its records were deleted', gone: true });
  // A store that reports the job gone (NATS: its bucket's stream does not exist) says the same, naming why.
  const gone = createApp({
    coordinator: new ScriptedCoordinator(),
    store: new Proxy(store, {
      get: (t, p) => {
        if (p === "list") return () => Promise.reject(new JobGoneError("list", 5000, { detail: "its bucket splitlease_job1 does not exist any more" }));
        const v = Reflect.get(t, p);
        return typeof v === "function" ? v.bind(t) : v;
      },
    }),
  });
  const res = await gone.request("/fleet");
  assert.equal(res.status, 410);
  assert.deepEqual(await res.json(), {
    error: 'job "job1" is gone: its records were deleted (its bucket splitlease_job1 does not exist any more)',
    gone: true,
  });
});

Deno.test("fleet http: on the leader, members are judged alive or dead from its view", async () => {
  const { get } = await setup({ drainToken: TOKEN, leader: true });
  const { body } = await get("/fleet");
  assert.deepEqual(body.liveness, { judgedBy: "here", by: "w1" });
  assert.deepEqual(body.members.map((m: { alive: boolean }) => m.alive), [true, true]);
});

Deno.test("fleet http: requeue, cancel and drain behind the token, each answering what happened", async () => {
  const { post, get } = await setup();
  // Without the token nothing happens.
  for (const path of ["/splits/s010/requeue", "/splits/requeue", "/splits/s000/cancel", "/members/w2/drain"]) {
    const r = await post(path, {});
    assert.equal(r.status, 401, path);
    const wrong = await post(path, { authorization: "Bearer nope" });
    assert.equal(wrong.status, 401, path);
  }
  assert.equal((await get("/fleet")).body.counts.quarantined, 2, "nothing changed");
  let r = await post("/splits/s010/requeue");
  assert.equal(r.status, 200);
  assert.equal(r.body.outcome, "requeued");
  assert.equal((await get("/fleet")).body.counts.quarantined, 1, "the view follows at once (cache invalidated)");
  r = await post("/splits/s010/requeue");
  assert.deepEqual([r.status, r.body.outcome, r.body.status], [409, "notQuarantined", "runnable"]);
  r = await post("/splits/nope/requeue");
  assert.deepEqual([r.status, r.body.outcome], [404, "notFound"]);
  r = await post("/splits/requeue");
  assert.deepEqual([r.status, r.body.found, r.body.requeued, r.body.message], [200, 1, 1, "1 of 1 quarantined split(s) requeued"]);
  r = await post("/splits/s000/cancel");
  assert.deepEqual([r.status, r.body.outcome, r.body.previousOwner], [200, "cancelled", "w1"]);
  r = await post("/splits/s000/cancel");
  assert.deepEqual([r.status, r.body.outcome], [200, "alreadyCancelled"]);
  r = await post("/splits/s005/cancel");
  assert.deepEqual([r.status, r.body.outcome], [409, "alreadyCompleted"]);
  r = await post("/members/w2/drain");
  assert.deepEqual([r.status, r.body.outcome, r.body.session], [200, "draining", "s2"]);
  r = await post("/members/w2/drain");
  assert.deepEqual([r.status, r.body.outcome], [200, "alreadyDraining"]);
  r = await post("/members/w9/drain");
  assert.deepEqual([r.status, r.body.outcome], [404, "notFound"]);
  const view = (await get("/fleet")).body;
  assert.equal(view.counts.cancelled, 1);
  assert.equal(view.members[1].draining, true);
  // A malformed id is 400; a wrong method 405.
  const bad = await post("/splits/a.b/cancel");
  assert.equal(bad.status, 400);
  assert.match(bad.body.error, /split id/);
});

Deno.test("fleet http: pause and resume the job behind the token, with a reason; a finished job is not paused (409)", async () => {
  const { post, get, store, app } = await setup();
  for (const path of ["/job/pause", "/job/resume"]) assert.equal((await post(path, {})).status, 401, path);
  const res = await app.request("/job/pause", { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ reason: "db incident" }) });
  const paused = await res.json();
  assert.deepEqual([res.status, paused.outcome, paused.paused.reason, paused.paused.by], [200, "paused", "db incident", "POST /job/pause on w1"]);
  const view = (await get("/fleet")).body;
  assert.deepEqual([view.plan.result.state, view.plan.result.paused.reason], ["paused", "db incident"], "the view follows at once");
  assert.deepEqual([(await post("/job/pause")).status, (await post("/job/pause")).body.outcome], [200, "alreadyPaused"]);
  let r = await post("/job/resume");
  assert.deepEqual([r.status, r.body.outcome], [200, "resumed"]);
  assert.equal((await get("/fleet")).body.plan.result.state, "running");
  r = await post("/job/resume");
  assert.deepEqual([r.status, r.body.outcome], [200, "notPaused"]);
  const plan = await store.get("plan");
  await store.update("plan", JSON.stringify({ ...JSON.parse(plan!.value), outcome: { kind: "allComplete", completed: 30 } }), plan!.revision);
  r = await post("/job/pause");
  assert.deepEqual([r.status, r.body.outcome], [409, "finished"]);
  await store.delete("plan");
  assert.deepEqual([(await post("/job/pause")).status, (await post("/job/resume")).status], [404, 404]);
});

Deno.test("fleet http: an unreadable record and a race lost five times are 409, a store that does not answer 503", async () => {
  const { store, post } = await setup();
  await store.create("split.junk", "{");
  await store.create("member.junk", "[]");
  for (const path of ["/splits/junk/requeue", "/splits/junk/cancel", "/members/junk/drain"]) {
    const r = await post(path);
    assert.deepEqual([r.status, r.body.outcome], [409, "unreadable"], path);
  }
  // A split whose owner commits before every try: the action gives up with a conflict.
  const racing = new Proxy(store, {
    get: (t, p) => {
      if (p === "update") {
        return async (key: string, value: string, revision: number) => {
          const cur = (await t.get(key))!;
          await t.update(key, cur.value, cur.revision); // the owner's commit lands first
          return t.update(key, value, revision);
        };
      }
      const v = Reflect.get(t, p);
      return typeof v === "function" ? v.bind(t) : v;
    },
  });
  const hot = createApp({ coordinator: new ScriptedCoordinator("w1"), store: racing, drainToken: TOKEN });
  for (const path of ["/splits/s000/cancel", "/splits/s011/requeue", "/members/w2/drain"]) {
    const res = await hot.request(path, { method: "POST", headers: auth });
    const body = await res.json();
    assert.deepEqual([res.status, body.outcome], [409, "conflict"], path);
    assert.match(body.message, /5 tries/);
  }
  const down = createApp({
    coordinator: new ScriptedCoordinator("w1"),
    store: new Proxy(store, {
      get: (t, p) => {
        if (p === "get") return () => Promise.reject(new StoreUnavailableError("get", 5000));
        const v = Reflect.get(t, p);
        return typeof v === "function" ? v.bind(t) : v;
      },
    }),
    drainToken: TOKEN,
  });
  const res = await down.request("/splits/s011/cancel", { method: "POST", headers: auth });
  assert.equal(res.status, 503);
  assert.match((await res.json()).error, /the store did not answer: /);
});

Deno.test("fleet http: a browser request from another site of the same domain (Sec-Fetch-Site: same-site) is refused too", async () => {
  const open = await setup({ drainOpen: true });
  const r = await open.post("/splits/s010/requeue", { "sec-fetch-site": "same-site" });
  assert.equal(r.status, 403);
  assert.match(r.body.error, /cross-site request refused .*Sec-Fetch-Site same-site/);
  assert.equal((await open.get("/fleet")).body.counts.quarantined, 2, "nothing was requeued");
});

Deno.test("fleet http: without a token the actions are closed (403) unless drainOpen; cross-site browser requests are refused", async () => {
  const closed = await setup({});
  const r = await closed.post("/splits/s010/requeue", {});
  assert.equal(r.status, 403);
  assert.match(r.body.error, /POST \/splits\/s010\/requeue is disabled: no drainToken is configured/);
  const open = await setup({ drainOpen: true });
  const crossSite: Record<string, string>[] = [{ origin: "https://evil.example" }, { "sec-fetch-site": "cross-site" }, { origin: "null" }];
  for (const headers of crossSite) {
    const x = await open.post("/splits/s010/requeue", headers);
    assert.equal(x.status, 403, JSON.stringify(headers));
    assert.match(x.body.error, /cross-site request refused/);
  }
  const same = await open.app.request("http://worker:8080/splits/s010/requeue", {
    method: "POST",
    headers: { origin: "http://worker:8080", "sec-fetch-site": "same-origin" },
  });
  assert.equal(same.status, 200);
  assert.equal((await open.post("/splits/s011/requeue", {})).status, 200, "a client without browser headers (curl, the CLI)");
  const res = await open.app.request("/splits/s010/requeue");
  assert.equal(res.status, 405);
  assert.equal(res.headers.get("allow"), "POST");
  const big = await open.app.request("/splits/s011/cancel", { method: "POST", body: "x".repeat(5000) });
  assert.equal(big.status, 413);
});

Deno.test("fleet http: GET / serves the page with a strict CSP and no token; GET /fleet.js its script", async () => {
  const { app } = await setup();
  const res = await app.request("/");
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type")!, /^text\/html/);
  const csp = res.headers.get("content-security-policy")!;
  assert.match(csp, /script-src 'self'/);
  assert.match(csp, /frame-ancestors 'none'/);
  const html = await res.text();
  assert.ok(html.includes('<script src="/fleet.js" data-base="" defer></script>'));
  assert.ok(!html.includes(TOKEN), "the token is never in the page");
  const js = await app.request("/fleet.js");
  assert.match(js.headers.get("content-type")!, /^text\/javascript/);
  const script = await js.text();
  assert.ok(!script.includes(TOKEN));
  assert.ok(!/innerHTML|insertAdjacentHTML|document\.write/.test(script), "store values are set as text only");
  // Without a store there is no page and no fleet route.
  const bare = createApp({ coordinator: new ScriptedCoordinator() });
  assert.equal((await bare.request("/fleet")).status, 404);
  assert.equal((await bare.request("/")).status, 404);
});

Deno.test("fleet http: one split in detail, ?match= search, the favicon and the stylesheet (issue 24 item 1)", async () => {
  const { app, get, store } = await setup();
  const one = await get("/fleet/splits/s010");
  assert.equal(one.status, 200);
  assert.equal(one.body.split.id, "s010");
  assert.equal(one.body.split.status, "quarantined");
  assert.ok(Array.isArray(one.body.split.tenancies) && Array.isArray(one.body.split.failures));
  assert.equal(typeof one.body.at, "number");
  assert.equal((await get("/fleet/splits/nope")).status, 404);
  assert.equal((await get("/fleet/splits/a.b")).status, 400);
  await store.create("split.bad", "{not json");
  assert.equal((await get("/fleet/splits/bad")).status, 409);
  const found = await get("/fleet?match=%22N%22%3A2");
  assert.equal(found.status, 200);
  assert.deepEqual(found.body.splits.map((s: { id: string }) => s.id), ["s002", "s020", "s021", "s022", "s023", "s024", "s025", "s026", "s027", "s028", "s029"]);
  assert.equal(found.body.page.match, '"n":2');
  assert.equal((await get(`/fleet?match=${"x".repeat(201)}`)).status, 400);
  assert.equal(typeof found.body.rate.eta.state, "string");
  assert.ok(Array.isArray(found.body.recent));
  for (const path of ["/favicon.ico", "/favicon.svg"]) {
    const res = await app.request(path);
    assert.equal(res.status, 200, path);
    assert.equal(res.headers.get("content-type"), "image/svg+xml");
    assert.match(await res.text(), /^<svg /);
  }
  const css = await app.request("/fleet.css");
  assert.match(css.headers.get("content-type")!, /^text\/css/);
  assert.match(await css.text(), /@media \(max-width: 700px\)/);
  const csp = (await app.request("/")).headers.get("content-security-policy")!;
  assert.match(csp, /style-src 'self'/, "no inline styles");
});
