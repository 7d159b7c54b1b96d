/**
 * Requests a browser never sends, written byte for byte on a TCP socket to
 * the worker app on Deno, Bun and Node (issue 21, item 8): an HTTP/1.0
 * request without a Host header (Bun used to answer 500 `Invalid URL`), a
 * Host that is not a host name, and a `/fleet` query with a negative limit
 * (answered "limit null" instead of echoing what was sent). Every runtime
 * answers a bad request with a 4xx or a normal answer, never a 5xx.
 */
import assert from "node:assert/strict";
import { buildOnce, kill, type Proc, RUNTIMES, spawn } from "../helpers/worker_procs.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };

/** Writes `request` to 127.0.0.1:`port` and reads the answer until the server closes (at most 5 s). */
async function raw(port: number, request: string): Promise<{ status: number; head: string; body: string }> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const timer = setTimeout(() => conn.close(), 5000);
  try {
    await conn.write(new TextEncoder().encode(request));
    const chunks: Uint8Array[] = [];
    const buf = new Uint8Array(65536);
    for (;;) {
      let n: number | null;
      try {
        n = await conn.read(buf);
      } catch {
        break; // closed by the timer, or reset
      }
      if (n === null) break;
      chunks.push(buf.slice(0, n));
      // A keep-alive answer with a complete body is enough.
      const text = new TextDecoder().decode(concat(chunks));
      const end = text.indexOf("\r\n\r\n");
      const len = /\r\ncontent-length: *(\d+)/i.exec(text);
      if (end >= 0 && len && new TextEncoder().encode(text.slice(end + 4)).length >= Number(len[1])) break;
    }
    const text = new TextDecoder().decode(concat(chunks));
    const end = text.indexOf("\r\n\r\n");
    const head = end >= 0 ? text.slice(0, end) : text;
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0);
    return { status, head, body: end >= 0 ? text.slice(end + 4) : "" };
  } finally {
    clearTimeout(timer);
    try {
      conn.close();
    } catch { /* closed */ }
  }
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

Deno.test({
  name: "http: raw requests without a usable Host and a bad /fleet limit get a 4xx or a normal answer on every runtime",
  ...opts,
  fn: async () => {
    await buildOnce();
    const procs: Proc[] = RUNTIMES.map((rt) => spawn(rt, { STORE: "memory", JOB: `raw-${rt}`, SPLITS: "2", RECORDS: "1000000" }));
    try {
      for (const p of procs) {
        const serving = await p.line((l) => l.event === "serving", "serving");
        const port = Number(serving.port);
        const where = (what: string, r: { status: number; head: string; body: string }) =>
          `${p.rt} ${what}: ${r.head.split("\r\n")[0]} ${r.body.slice(0, 200)}`;

        // HTTP/1.0 has no Host header: answered as if it named the server.
        const old = await raw(port, "GET /healthz HTTP/1.0\r\n\r\n");
        assert.equal(old.status, 200, where("HTTP/1.0 without Host", old));
        const oldFleet = await raw(port, "GET /fleet?limit=1 HTTP/1.0\r\n\r\n");
        assert.equal(oldFleet.status, 200, where("HTTP/1.0 /fleet without Host", oldFleet));
        assert.equal(JSON.parse(oldFleet.body).job, `raw-${p.rt}`, where("HTTP/1.0 /fleet", oldFleet));

        // A Host that is no host name, or empty: never a 5xx.
        for (const host of ["a b", "", "[::1"]) {
          const r = await raw(port, `GET /healthz HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
          assert.ok(r.status >= 200 && r.status < 500, where(`Host ${JSON.stringify(host)}`, r));
        }

        // A negative limit is refused naming what was sent.
        for (const limit of ["-1", "abc", "1.5", "0"]) {
          const r = await raw(port, `GET /fleet?limit=${limit} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
          assert.equal(r.status, 400, where(`limit=${limit}`, r));
          const error = String(JSON.parse(r.body).error);
          assert.ok(error.includes(`limit ${JSON.stringify(limit)} must be`), where(`limit=${limit}`, r));
        }
      }
    } finally {
      await Promise.all(procs.map(kill));
    }
  },
});
