/**
 * Bun adapter: serves a source with `Bun.serve`, drains on SIGTERM/SIGINT
 * and exits 0 (drained), 3 (stalled) or 1 (error).
 *
 * @example
 * ```ts
 * import { serve } from "@splitlease/splitlease/bun";
 * import { MemoryStore, type SplitSource } from "@splitlease/splitlease";
 * declare const source: SplitSource;
 * await serve({ store: new MemoryStore(), source, job: "backfill", port: 8080 });
 * ```
 *
 * @module
 */
import process from "node:process";
import type { ServeOptions } from "../src/serve/serve_options.ts";
import { serveWith, type Service } from "../src/serve/serve_core.ts";

export type { ServeOptions } from "../src/serve/serve_options.ts";
export type { ServeResult, Service } from "../src/serve/serve_core.ts";

/** The part of Bun's API this adapter uses (Bun's types are not a dependency). */
interface BunServer {
  port: number;
  stop(closeActiveConnections?: boolean): Promise<void> | void;
}
declare const Bun: {
  version: string;
  serve(options: {
    port: number;
    hostname: string;
    fetch: (request: Request) => Response | Promise<Response>;
  }): BunServer;
};

/**
 * `request` with an absolute URL. Bun leaves `request.url` relative
 * (`/healthz`) when the Host header is missing (HTTP/1.0) or empty, and
 * builds an unparsable one on a Host that is not a host (`[::1`), and `new URL(request.url)` in the app then throws: a 500 `Invalid
 * URL` where Deno and Node answer normally. Such a request is answered as if
 * it had named this server, as Deno and Node do.
 */
function absolute(request: Request, origin: string): Request {
  if (URL.canParse(request.url)) return request;
  // Relative (`/healthz`), or built on a Host that is no host (`http://[::1/healthz`): keep the path.
  const path = request.url.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i, "");
  const url = URL.canParse(path, origin) ? new URL(path, origin) : new URL("/", origin);
  return new Request(url, request);
}

/**
 * Joins the job, runs the worker and serves the app on `Bun.serve` until
 * the job ends or a signal drains it; then exits (unless `exit: false`).
 *
 * @example
 * ```ts
 * import { serve } from "@splitlease/splitlease/bun";
 * import { MemoryStore, type SplitSource } from "@splitlease/splitlease";
 * declare const source: SplitSource;
 * const service = await serve({ store: new MemoryStore(), source, job: "demo", port: 0, exit: false });
 * console.log((await service.done).exitCode);
 * ```
 */
export function serve<D>(options: ServeOptions<D>): Promise<Service> {
  return serveWith(options, {
    runtime: `bun ${Bun.version}`,
    listen(fetch, port, hostname) {
      let origin = "";
      const server = Bun.serve({ port, hostname, fetch: (request) => fetch(absolute(request, origin)) });
      origin = `http://${hostname === "0.0.0.0" || hostname === "::" ? "localhost" : hostname.includes(":") ? `[${hostname}]` : hostname}:${server.port}`;
      return Promise.resolve({ port: server.port, close: async () => await server.stop(true) });
    },
    onSignal(signals, handler) {
      const subs = signals.map((s) => {
        const fn = () => handler(s);
        process.on(s, fn);
        return () => process.off(s, fn);
      });
      return () => subs.forEach((u) => u());
    },
    memoryUsage: () => process.memoryUsage(),
    exit: (code) => process.exit(code),
  });
}
