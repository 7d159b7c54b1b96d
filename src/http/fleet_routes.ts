/**
 * The fleet routes of the HTTP app: `GET /fleet` (the fleet view, read-only
 * and open like `/status`; `GET /fleet/splits/:id` one split in detail), the
 * live fleet page (`GET /`, `GET /fleet.js`, `GET /fleet.css`, the favicon)
 * and the operator actions, behind the same bearer token and body limit as
 * `POST /drain`:
 *
 * - `POST /splits/:id/requeue` and `POST /splits/requeue` (every quarantined split),
 * - `POST /splits/:id/cancel`,
 * - `POST /members/:instance/drain`,
 * - `POST /job/pause` (an optional JSON body `{"reason": "…"}`) and `POST /job/resume`.
 *
 * Every answer is JSON naming what happened: 200 for done (or already so),
 * 404 for no such split or member, 409 for a split in another state or a
 * race that kept losing, 400 for a malformed id or query, 503 when the store
 * does not answer, 410 (`GET /fleet`) when the job's records were deleted,
 * 403 for a cross-site browser request.
 *
 * @module
 */
import type { Context, Hono, MiddlewareHandler } from "hono";
import type { Coordinator } from "../coordinator/types.ts";
import { InvalidKeyError, JobGoneError, SplitleaseError, StoreUnavailableError } from "../errors.ts";
import {
  cancelSplitIn,
  drainMemberIn,
  pauseShards,
  requeueQuarantinedIn,
  requeueSplitIn,
  resumeShards,
} from "../fleet/shard_actions.ts";
import { findSplitShard, type JobShards } from "../fleet/job_shards.ts";
import { mergeShardViews } from "../fleet/shard_views.ts";
import { shardJob } from "../coordinator/shard.ts";
import { normalizeFleetQuery, parseFleetLimit, splitView } from "../fleet/fleet_view.ts";
import { liveSplitRecord, ProgRecordSchema, safeDecodeRecord, SplitRecordSchema } from "../records.ts";
import { assertValidId, keys } from "../store/keys.ts";
import type { FleetQuery, FleetState } from "../fleet/fleet_query.ts";
import type { FleetView } from "../fleet/types.ts";
import { FULL_READ_MAX_SPLITS } from "../fleet/fleet_summary.ts";
import type { Store } from "../store/store.ts";
import { FLEET_FAVICON_SVG, FLEET_PAGE_STYLE, renderFleetPage } from "./fleet_page.ts";
import { FLEET_PAGE_SCRIPT } from "./fleet_page_script.ts";
import { type IndexNote, StoreFleet } from "./store_fleet.ts";

/** What the fleet routes need from the app. */
export interface FleetRouteOptions {
  /**
   * The job's stores, one per shard in shard order (one for an unsharded
   * job): `GET /fleet` folds the shards' views into the job's, the job's
   * actions act on every shard, a split's on the shard that holds it.
   */
  stores: readonly Store[];
  coordinator: Coordinator;
  /** The bearer-token guard of `POST /drain`. */
  guard: MiddlewareHandler;
  /** Refuses an action body past 4 KiB with 413 before it is read whole. */
  bodyLimit: MiddlewareHandler;
  /** Registers the 405 answer of a path (after its handlers). */
  allow: (path: string, method: "GET" | "POST") => void;
  /** How long one snapshot of the store serves `GET /fleet` requests (default 1000 ms). */
  cacheMs?: number;
  /**
   * Splits (planned, and cut) above which `GET /fleet` answers from a live
   * index of the job (`FleetIndex`: its pages read once, its split records
   * watched) instead of reading every record each second (default
   * `FULL_READ_MAX_SPLITS`, 10 000).
   */
  indexAbove?: number;
  /** How long that index lives after the last `GET /fleet` (default 60 000 ms: an open page keeps it). */
  indexIdleMs?: number;
  /**
   * How the operator actions are guarded, for the page (`GET /fleet`'s
   * `operator.access`): `token` (the drain token), `open` (`drainOpen`),
   * `closed` (no token configured: refused) or `none` (a finished job shown
   * read-only). Default `closed`.
   */
  operator?: () => OperatorAccess;
}

/** How the operator actions of a fleet page are guarded (see {@linkcode FleetRouteOptions.operator}). */
export type OperatorAccess = "token" | "open" | "closed" | "none";

const json = (body: unknown, status: number) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json; charset=utf-8" } });

/** HTTP status of an action's outcome. */
function statusOf(outcome: string): number {
  switch (outcome) {
    case "requeued":
    case "cancelled":
    case "draining":
    case "alreadyCancelled":
    case "alreadyDraining":
    case "paused":
    case "alreadyPaused":
    case "resumed":
    case "notPaused":
      return 200;
    case "notFound":
      return 404;
    default: // notQuarantined, alreadyCompleted, finished, unreadable, conflict
      return 409;
  }
}

/**
 * `GET /fleet` of a job whose records were deleted (`splitlease delete`):
 * 410 with `gone: true`, so the page says the job is gone instead of
 * retrying a store that answers.
 */
function gone(job: string, e?: JobGoneError, shard?: string): Response {
  const whose = shard ? `the records of its ${shard}` : "its records";
  return json({ error: `job "${job}" is gone: ${whose} were deleted${e ? ` (${e.reason})` : ""}`, gone: true }, 410);
}

/** Answers an error as JSON: 400 for bad input, 503 for an outage; anything else is rethrown (500). */
function failure(e: unknown): Response {
  if (e instanceof InvalidKeyError || (e instanceof SplitleaseError && e.code === "INVALID_ARGUMENT")) {
    return json({ error: e.message }, 400);
  }
  if (e instanceof StoreUnavailableError || (e instanceof SplitleaseError && e.code === "CLOSED")) {
    return json({ error: `the store did not answer: ${e.message}` }, 503);
  }
  throw e;
}

/**
 * Refuses a browser request sent from another site (an `Origin` that is not
 * this host, or `Sec-Fetch-Site: cross-site`): with `drainOpen` there is no
 * token, and a page elsewhere must not cancel splits through an operator's
 * browser. Non-browser clients send neither header.
 */
const sameOrigin: MiddlewareHandler = async (c, next) => {
  const site = c.req.header("sec-fetch-site");
  const origin = c.req.header("origin");
  let cross = site === "cross-site" || site === "same-site";
  if (!cross && origin !== undefined) {
    try {
      cross = new URL(origin).host !== (c.req.header("host") ?? new URL(c.req.url).host);
    } catch {
      cross = true;
    }
  }
  if (cross) return json({ error: `cross-site request refused (Origin ${origin ?? "none"}, Sec-Fetch-Site ${site ?? "none"})` }, 403);
  await next();
};

/** Mounts the fleet routes on `app`. */
export function mountFleetRoutes(app: Hono, o: FleetRouteOptions): void {
  const cacheMs = o.cacheMs ?? 1000;
  const indexAbove = o.indexAbove ?? FULL_READ_MAX_SPLITS;
  const indexIdleMs = o.indexIdleMs ?? 60_000;
  const fleets = o.stores.map((s) => new StoreFleet(s, cacheMs, indexAbove, indexIdleMs));
  const invalidate = () => fleets.forEach((f) => f.invalidate());
  const job = o.coordinator.status().job;
  // The job's shards, for the actions: over one store they are the unsharded actions.
  const shards: JobShards = { job, stores: o.stores, jobs: o.stores.map((_, i) => shardJob(job, i)) };

  app.get("/fleet", async (c) => {
    const q: FleetQuery = {};
    const state = c.req.query("state");
    if (state !== undefined && state !== "") q.state = state.split(",").map((s) => s.trim()) as FleetState[];
    const owner = c.req.query("owner");
    if (owner) q.owner = owner;
    const after = c.req.query("after");
    if (after) q.after = after;
    const match = c.req.query("match");
    if (match) q.match = match;
    const limit = c.req.query("limit");
    try {
      if (limit) q.limit = parseFleetLimit(limit);
      const st = o.coordinator.status();
      normalizeFleetQuery(q); // a bad query costs no listing
      const operator = { access: o.operator?.() ?? "closed" };
      const head = { job: st.job, servedBy: { instance: st.instance, isLeader: st.isLeader }, operator };
      if (fleets.length === 1) {
        const liveness = st.isLeader ? { by: st.instance, liveMembers: st.liveMembers } : undefined;
        // How large the job is, as this member knows it (its plan and leader records): nothing read for a small job.
        const r = await fleets[0].view(q, liveness, st.counts?.planned ?? st.plan?.planned ?? 0);
        if (r === "gone") return gone(st.job);
        return json({ ...head, ...r.view, ...(r.index ? { index: r.index } : {}) }, 200);
      }
      // A sharded job: each shard's view (judged by this member where it leads that shard), folded into the job's.
      const rs = await Promise.all(fleets.map((f, i) => {
        const sh = st.shards?.[i];
        const liveness = sh?.isLeader ? { by: st.instance, liveMembers: sh.liveMembers } : undefined;
        return f.view(q, liveness, sh?.counts.planned ?? 0);
      }));
      const goneAt = rs.findIndex((r) => r === "gone");
      if (goneAt >= 0) return gone(st.job, undefined, `shard ${goneAt} (job "${shards.jobs[goneAt]}")`);
      const views = rs as { view: FleetView; index?: IndexNote }[];
      const notes = views.flatMap((r) => (r.index ? [r.index] : []));
      const index = notes.length === 0 ? undefined : notes.some((n) => n.state === "building")
        ? { state: "building", applied: notes.reduce((n, x) => n + (x.state === "building" ? x.applied : 0), 0), splits: notes.reduce((n, x) => n + x.splits, 0) }
        : { state: "ready", splits: notes.reduce((n, x) => n + x.splits, 0) };
      return json({ ...head, ...mergeShardViews(views.map((r) => r.view), shards.jobs), ...(index ? { index } : {}) }, 200);
    } catch (e) {
      if (e instanceof JobGoneError) return gone(o.coordinator.status().job, e);
      return failure(e);
    }
  });
  o.allow("/fleet", "GET");

  // One split in detail (its record read now, not the cached listing): tenancies, failures, estimate.
  app.get("/fleet/splits/:id", async (c) => {
    try {
      const id = c.req.param("id")!;
      assertValidId(id, "split id");
      // Of a sharded job, the shard that holds it.
      const at = o.stores.length === 1 ? 0 : await findSplitShard(shards, id);
      if (at < 0) return json({ error: `no split "${id}"` }, 404);
      const store = o.stores[at];
      const [pe, e] = await Promise.all([store.get(keys.prog(id)), store.get(keys.split(id))]);
      if (!e) return json({ error: `no split "${id}"` }, 404);
      const r = safeDecodeRecord(e.key, e.value, SplitRecordSchema);
      if (!r.ok) return json({ error: `the record of split "${id}" is unreadable: ${r.error.message}` }, 409);
      // Its live position is in its progress record (an unreadable one leaves the split record's).
      const p = pe ? safeDecodeRecord(pe.key, pe.value, ProgRecordSchema) : undefined;
      const split = splitView(id, liveSplitRecord(r.value, p?.ok ? p.value : undefined));
      return json({ at: Date.now(), split, ...(o.stores.length > 1 ? { shard: at } : {}) }, 200);
    } catch (e) {
      return failure(e);
    }
  });
  o.allow("/fleet/splits/:id", "GET");

  const page = (body: string, type: string) => (c: Context) => {
    c.header("content-type", type);
    c.header("cache-control", "no-store");
    c.header("x-content-type-options", "nosniff");
    c.header("referrer-policy", "no-referrer");
    c.header(
      "content-security-policy",
      "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    return c.body(body);
  };
  app.get("/", (c) => page(renderFleetPage(c.req.path), "text/html; charset=utf-8")(c));
  o.allow("/", "GET");
  app.get("/fleet.js", page(FLEET_PAGE_SCRIPT, "text/javascript; charset=utf-8"));
  o.allow("/fleet.js", "GET");
  app.get("/fleet.css", page(FLEET_PAGE_STYLE, "text/css; charset=utf-8"));
  o.allow("/fleet.css", "GET");
  // Browsers ask for /favicon.ico whatever the page links; both names serve the same SVG.
  for (const path of ["/favicon.ico", "/favicon.svg"]) {
    app.get(path, (c) => {
      c.header("content-type", "image/svg+xml");
      c.header("cache-control", "max-age=86400");
      c.header("x-content-type-options", "nosniff");
      return c.body(FLEET_FAVICON_SVG);
    });
    o.allow(path, "GET");
  }

  const action = (path: string, run: (c: Context) => Promise<object>) => {
    app.post(path, sameOrigin, o.guard, o.bodyLimit, async (c) => {
      // No body is needed; one that is there is read (and bounded) but ignored.
      await c.req.text();
      try {
        const r = await run(c);
        invalidate();
        return json(r, "outcome" in r ? statusOf(String(r.outcome)) : 200);
      } catch (e) {
        return failure(e);
      }
    });
    o.allow(path, "POST");
  };
  // Over every shard of a sharded job (a split's: on the shard that holds it); over one store, the unsharded actions.
  action("/splits/requeue", async () => {
    const r = await requeueQuarantinedIn(shards);
    return { message: `${r.requeued} of ${r.found} quarantined split(s) requeued`, ...r };
  });
  action("/splits/:id/requeue", (c) => requeueSplitIn(shards, c.req.param("id")!));
  action("/splits/:id/cancel", (c) => cancelSplitIn(shards, c.req.param("id")!));
  action("/members/:instance/drain", (c) => drainMemberIn(shards, c.req.param("instance")!));
  action("/job/pause", async (c) => pauseShards(shards, { by: `POST /job/pause on ${o.coordinator.instance}`, reason: reasonOf(await c.req.text()) }));
  action("/job/resume", () => resumeShards(shards));
}

/** The `reason` of a pause's body (`{"reason": "…"}`), if it has one; any other body is ignored like every action's. */
function reasonOf(body: string): string | undefined {
  try {
    const v = body.trim() ? JSON.parse(body) : undefined;
    return typeof v?.reason === "string" && v.reason.trim() ? v.reason.trim() : undefined;
  } catch {
    return undefined;
  }
}
