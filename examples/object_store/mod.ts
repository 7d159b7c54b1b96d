/**
 * Object-store backfill example: planner, source, S3 and directory
 * backends, a file sink, and config from the environment.
 *
 * @module
 */
export * from "./source.ts";
export * from "./s3.ts";
export * from "./dir.ts";
export * from "./file_sink.ts";
export * from "./config.ts";
