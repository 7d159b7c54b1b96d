/**
 * Deno adapter: serves a source with `Deno.serve`, drains on SIGTERM/SIGINT
 * and exits 0 (drained), 3 (stalled) or 1 (error).
 *
 * @example
 * ```ts
 * import { serve } from "@splitlease/splitlease/deno";
 * import { MemoryStore, type SplitSource } from "@splitlease/splitlease";
 * declare const source: SplitSource;
 * await serve({ store: new MemoryStore(), source, job: "backfill", port: 8080 });
 * ```
 *
 * @module
 */
import type { ServeOptions } from "../src/serve/serve_options.ts";
import { serveWith, type Service } from "../src/serve/serve_core.ts";

export type { ServeOptions } from "../src/serve/serve_options.ts";
export type { ServeResult, Service } from "../src/serve/serve_core.ts";
export { denoWebSocket } from "./deno_websocket.ts";

/**
 * Joins the job, runs the worker and serves the app on `Deno.serve` until
 * the job ends or a signal drains it; then exits (unless `exit: false`).
 *
 * @example
 * ```ts
 * import { serve } from "@splitlease/splitlease/deno";
 * import { MemoryStore, type SplitSource } from "@splitlease/splitlease";
 * declare const source: SplitSource;
 * const service = await serve({ store: new MemoryStore(), source, job: "demo", port: 0, exit: false });
 * console.log((await service.done).exitCode);
 * ```
 */
export function serve<D>(options: ServeOptions<D>): Promise<Service> {
  return serveWith(options, {
    runtime: `deno ${Deno.version.deno}`,
    listen(fetch, port, hostname) {
      const server = Deno.serve({ port, hostname, onListen: () => {} }, fetch);
      return Promise.resolve({ port: server.addr.port, close: () => server.shutdown() });
    },
    onSignal(signals, handler) {
      const subs = signals.map((s) => {
        const fn = () => handler(s);
        Deno.addSignalListener(s as Deno.Signal, fn);
        return () => Deno.removeSignalListener(s as Deno.Signal, fn);
      });
      return () => subs.forEach((u) => u());
    },
    memoryUsage: () => Deno.memoryUsage(),
    exit: (code) => Deno.exit(code),
  });
}
