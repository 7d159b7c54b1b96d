/**
 * Request-driven platforms: a fetch handler that runs one bounded slice of
 * work per invocation (join, work within the budget, drain, release, leave)
 * and answers a JSON summary. Web standards only: usable on Deno Deploy,
 * Cloudflare-style workers, Bun, Node (with any fetch-based server) and
 * function platforms.
 *
 * @example
 * ```ts
 * import { createSliceHandler } from "@splitlease/splitlease/serverless";
 * import { MemoryStore, type SplitSource } from "@splitlease/splitlease";
 * declare const source: SplitSource;
 * export default { fetch: createSliceHandler({ store: new MemoryStore(), source, job: "backfill", budgetMs: 25_000 }) };
 * ```
 *
 * @module
 */
export { createSliceHandler } from "../src/http/slice_handler.ts";
export { runSlice, type SliceResult } from "../src/slice/slice_run.ts";
export { type SliceOptions } from "../src/slice/slice_options.ts";
