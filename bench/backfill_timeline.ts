/**
 * What the backfill bench reads from its workers' event lines once a run is
 * over (pure functions; bench/backfill_bench.ts feeds them): the crash
 * floor, lane time left idle while runnable splits existed, bursts of
 * starts after a kill, and the leader's cut asks.
 *
 * @module
 */

/** One event line of a worker process (bench/backfill_worker.ts), tagged with the process's index. */
export interface Ev {
  ev: string;
  at: number;
  proc: number;
  id?: string;
  lane?: string;
  from?: number;
  to?: number;
  msg?: string;
  fields?: Record<string, unknown>;
  keep?: { from: number; to: number };
  declined?: boolean;
}

/**
 * The crash floor: the makespan of perfect work-stealing that loses the
 * killed lanes at the kill. Until the kill the run is what it was; from
 * the kill, every record not yet processed (the killed lanes' batches in
 * flight included) is shared perfectly among the surviving lanes:
 *
 *   floor = (killedAt − t0) + (total − processed by killedAt) × msPerRecord ÷ (lanes − lostLanes)
 *
 * (records counted once however often processed; a record is processed
 * when the batch holding it was reported done). Without a kill at 50 % of
 * an ideal run, losing 2 of 8 lanes: 0.5 + 0.5 × 8 / 6 = 1.17 × ideal.
 */
export function crashFloor(o: {
  total: number;
  msPerRecord: number;
  lanes: number;
  lostLanes: number;
  t0: number;
  killedAt: number;
  processed: readonly { from: number; to: number; at: number }[];
}): number {
  const hit = new Uint8Array(o.total);
  let done = 0;
  for (const b of o.processed) {
    if (b.at > o.killedAt) continue;
    for (let i = b.from; i < b.to; i++) if (!hit[i]) (hit[i] = 1), done++;
  }
  return o.killedAt - o.t0 + ((o.total - done) * o.msPerRecord) / (o.lanes - o.lostLanes);
}

interface Tenancy {
  id: string;
  proc: number;
  start: number;
  end: number;
  /** Ended by the kill (its process died holding it). */
  killed: boolean;
}

/** Tenancies (a start to its lane's end) from the event lines; open ones end at the kill or at `end`. */
export function tenancies(evs: readonly Ev[], end: number, killed = -1, killedAt = Infinity): Tenancy[] {
  const open = new Map<string, Tenancy>();
  const out: Tenancy[] = [];
  for (const e of [...evs].sort((a, b) => a.at - b.at)) {
    const key = `${e.proc}/${e.lane}`;
    if (e.ev === "started" && e.id) {
      const t = { id: e.id, proc: e.proc, start: e.at, end, killed: false };
      open.set(key, t);
      out.push(t);
    } else if (e.ev === "ended") {
      const t = open.get(key);
      if (t) t.end = e.at;
      open.delete(key);
    }
  }
  for (const t of open.values()) {
    if (t.proc === killed) (t.end = Math.min(t.end, killedAt)), (t.killed = true);
  }
  return out;
}

/**
 * Lane time (ms × lanes) left idle while runnable splits existed, from t0
 * to `end`: at each moment, min(idle lanes of the live processes, runnable
 * splits). A split is runnable from when it exists (planned: t0; a
 * residual: the log line of the cut that listed it) until it is done,
 * except while it runs. `all`: the killed process's splits count as
 * runnable from the kill (what the crash floor assumes); `unstarted`: they
 * do not (they wait out the lease in any system) — only splits never
 * started, released or handed back count.
 */
export function idleLaneTime(o: {
  evs: readonly Ev[];
  procs: number;
  lanesPerProc: number;
  t0: number;
  end: number;
  killed?: number;
  killedAt?: number;
}): { all: number; unstarted: number } {
  const killed = o.killed ?? -1, killedAt = o.killedAt ?? Infinity;
  const ts = tenancies(o.evs, o.end, killed, killedAt);
  const exists = new Map<string, number>();
  const doneAt = new Map<string, number>();
  for (const e of o.evs) {
    if (e.ev === "started" && e.id && /^b\d+$/.test(e.id)) exists.set(e.id, o.t0);
    if (e.ev === "log" && /^Cut a split's remaining work/.test(e.msg ?? "")) {
      for (const r of (e.fields?.residuals as string[] | undefined) ?? []) exists.set(r, Math.min(exists.get(r) ?? Infinity, e.at));
    }
    if (e.ev === "done" && e.id) doneAt.set(e.id, Math.min(doneAt.get(e.id) ?? Infinity, e.at));
  }
  for (const t of ts) if (!exists.has(t.id)) exists.set(t.id, t.start);
  const byId = new Map<string, Tenancy[]>();
  for (const t of ts) byId.set(t.id, [...(byId.get(t.id) ?? []), t]);
  const cuts = new Set<number>([o.t0, o.end]);
  for (const t of ts) cuts.add(t.start), cuts.add(t.end);
  for (const v of exists.values()) cuts.add(v);
  for (const v of doneAt.values()) cuts.add(v);
  if (Number.isFinite(killedAt)) cuts.add(killedAt);
  const times = [...cuts].filter((t) => t >= o.t0 && t <= o.end).sort((a, b) => a - b);
  let all = 0, unstarted = 0;
  for (let k = 0; k + 1 < times.length; k++) {
    const mid = (times[k] + times[k + 1]) / 2, dt = times[k + 1] - times[k];
    let idle = 0;
    for (let p = 0; p < o.procs; p++) {
      if (p === killed && mid >= killedAt) continue;
      const busy = ts.filter((t) => t.proc === p && t.start <= mid && mid < t.end).length;
      idle += Math.max(0, o.lanesPerProc - busy);
    }
    if (!idle) continue;
    let runnable = 0, waiting = 0;
    for (const [id, from] of exists) {
      if (from > mid || (doneAt.get(id) ?? Infinity) <= mid) continue;
      const own = byId.get(id) ?? [];
      if (own.some((t) => t.start <= mid && mid < t.end)) continue;
      runnable++;
      const last = own.filter((t) => t.end <= mid).at(-1);
      if (!last?.killed) waiting++;
    }
    all += Math.min(idle, runnable) * dt;
    unstarted += Math.min(idle, waiting) * dt;
  }
  return { all, unstarted };
}

/** The largest number of starts within `windowMs` of each other after `after`, and when the burst began. */
export function largestBurst(starts: readonly number[], after: number, windowMs = 10): { n: number; at: number } {
  const s = starts.filter((t) => t > after).sort((a, b) => a - b);
  let best = { n: 0, at: NaN };
  for (let i = 0, j = 0; i < s.length; i++) {
    while (s[i] - s[j] > windowMs) j++;
    if (i - j + 1 > best.n) best = { n: i - j + 1, at: s[j] };
  }
  return best;
}

/**
 * The leader's cut asks ("Asked for a cut" lines): when the first came,
 * the parts asked each time, how many asked for a split already at its end
 * (done, or whose batch in flight reaches its end), and how many for a
 * split no lane had started yet (asked as it was dealt: the processes'
 * clocks agree to a few ms).
 */
export function cutAsks(evs: readonly Ev[], batch: number): { times: number[]; parts: number[]; atEnd: number; unstarted: number } {
  const asks = evs.filter((e) => e.ev === "log" && e.msg === "Asked for a cut").sort((a, b) => a.at - b.at);
  let atEnd = 0, unstarted = 0;
  for (const a of asks) {
    const id = String(a.fields?.split);
    const before = evs.filter((e) => e.id === id && e.at <= a.at);
    if (before.some((e) => e.ev === "done")) {
      atEnd++;
      continue;
    }
    const start = before.filter((e) => e.ev === "started").at(-1);
    if (!start) {
      unstarted++;
      continue;
    }
    const keep = before.filter((e) => e.ev === "cut" && !e.declined && e.keep).at(-1)?.keep;
    const to = Math.min(start.to ?? Infinity, keep?.to ?? Infinity);
    const pos = Math.max(start.from ?? 0, ...before.filter((e) => e.ev === "processed").map((e) => e.to ?? 0));
    if (to - pos <= batch) atEnd++;
  }
  return { times: asks.map((a) => a.at), parts: asks.map((a) => Number(a.fields?.parts)), atEnd, unstarted };
}
