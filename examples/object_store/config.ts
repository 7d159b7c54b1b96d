/**
 * Backend selection from environment variables, shared by the runnable
 * worker (`main.ts`) and the demo:
 *
 * - `OBJSTORE_DIR`: a local directory, or
 * - `OBJSTORE_BUCKET` with `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`
 *   (optional `AWS_SESSION_TOKEN`, `AWS_REGION`, `S3_ENDPOINT`);
 * - `OBJSTORE_PREFIX`: only keys starting with it (both).
 *
 * @module
 */
import { directoryBackend } from "./dir.ts";
import { s3Backend } from "./s3.ts";
import type { ObjectBackend } from "./source.ts";

/** Environment as a plain record (`process.env`, `Deno.env.toObject()`). */
export type Env = Record<string, string | undefined>;

/** Builds the backend the environment names; throws naming what is missing or conflicting. */
export function backendFromEnv(env: Env): ObjectBackend {
  const dir = env.OBJSTORE_DIR?.trim();
  const bucket = env.OBJSTORE_BUCKET?.trim();
  const prefix = env.OBJSTORE_PREFIX ?? "";
  if (dir && bucket) {
    throw new TypeError("object store config: set OBJSTORE_DIR or OBJSTORE_BUCKET, not both");
  }
  if (dir) return directoryBackend({ dir, prefix });
  if (bucket) {
    return s3Backend({
      bucket,
      prefix,
      region: env.AWS_REGION || env.AWS_DEFAULT_REGION,
      endpoint: env.S3_ENDPOINT || undefined,
      accessKeyId: env.AWS_ACCESS_KEY_ID ?? "",
      secretAccessKey: env.AWS_SECRET_ACCESS_KEY ?? "",
      sessionToken: env.AWS_SESSION_TOKEN || undefined,
    });
  }
  throw new TypeError(
    "object store config: no input: set OBJSTORE_DIR to a local directory, or OBJSTORE_BUCKET " +
      "(with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, optionally S3_ENDPOINT and AWS_REGION)",
  );
}

/** Reads an optional positive integer variable; throws naming it when malformed. */
export function intFromEnv(env: Env, name: string, dflt: number, min = 1): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new TypeError(`${name} must be an integer >= ${min} (got ${JSON.stringify(raw)})`);
  return n;
}
