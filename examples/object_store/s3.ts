/**
 * S3-compatible backend of the object-store source: ListObjectsV2 over a
 * prefix and ranged GETs pinned to the planned ETag (`If-Match`), signed
 * with SigV4 by `aws4fetch` (fetch + Web Crypto only, so it runs unchanged
 * on Deno, Bun, Node and in workers).
 *
 * @module
 */
import { AwsClient } from "aws4fetch";
import { type ObjectBackend, ObjectChangedError, type ObjectEntry } from "./source.ts";

/** Options of {@linkcode s3Backend}. */
export interface S3BackendOptions {
  /** Bucket name. */
  bucket: string;
  /** Only keys starting with this prefix. */
  prefix?: string;
  /** Region (default `us-east-1`). */
  region?: string;
  /**
   * Endpoint URL of an S3-compatible service (MinIO, R2, a local fake):
   * requests are path-style (`<endpoint>/<bucket>/<key>`). Default: AWS,
   * virtual-hosted (`https://<bucket>.s3.<region>.amazonaws.com/<key>`).
   */
  endpoint?: string;
  /** Access key id (AWS_ACCESS_KEY_ID). */
  accessKeyId: string;
  /** Secret access key (AWS_SECRET_ACCESS_KEY). */
  secretAccessKey: string;
  /** Session token for temporary credentials (AWS_SESSION_TOKEN). */
  sessionToken?: string;
  /** Retries on 5xx/429 with jittered backoff (aws4fetch; default 5). */
  retries?: number;
  /** Keys per ListObjectsV2 page (default 1000). */
  pageSize?: number;
}

/** Decodes the five XML entities and numeric character references. */
function xmlText(s: string): string {
  return s.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|amp|lt|gt|quot|apos);/g, (_, e: string) => {
    switch (e) {
      case "amp":
        return "&";
      case "lt":
        return "<";
      case "gt":
        return ">";
      case "quot":
        return '"';
      case "apos":
        return "'";
    }
    return String.fromCodePoint(e[1] === "x" ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10));
  });
}

function tag(xml: string, name: string): string | undefined {
  const m = new RegExp(`<${name}>([\\s\\S]*?)</${name}>`).exec(xml);
  return m ? xmlText(m[1]) : undefined;
}

/** Parses one ListObjectsV2 page (exported for tests). */
export function parseListPage(xml: string): { objects: ObjectEntry[]; nextToken?: string } {
  const objects: ObjectEntry[] = [];
  for (const m of xml.matchAll(/<Contents>([\s\S]*?)<\/Contents>/g)) {
    const key = tag(m[1], "Key");
    const size = Number(tag(m[1], "Size"));
    const etag = tag(m[1], "ETag");
    if (key === undefined || !Number.isFinite(size) || !etag) {
      throw new Error(`S3 ListObjectsV2: malformed <Contents> entry: ${m[1].slice(0, 200)}`);
    }
    if (key.endsWith("/") && size === 0) continue; // a "folder" marker, not data
    objects.push({ key, size, etag });
  }
  const truncated = tag(xml, "IsTruncated") === "true";
  const nextToken = truncated ? tag(xml, "NextContinuationToken") : undefined;
  if (truncated && !nextToken) throw new Error("S3 ListObjectsV2: truncated page without NextContinuationToken");
  return { objects, nextToken };
}

function encodeKey(key: string): string {
  return key.split("/").map(encodeURIComponent).join("/");
}

async function s3Error(res: Response, what: string): Promise<Error> {
  const body = await res.text().catch(() => "");
  const code = tag(body, "Code");
  const message = tag(body, "Message");
  const hint = res.status === 403
    ? " (check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY and the bucket policy)"
    : res.status === 404 && code === "NoSuchBucket"
    ? " (check the bucket name and the endpoint)"
    : "";
  return new Error(`S3 ${what}: HTTP ${res.status}${code ? ` ${code}` : ""}${message ? `: ${message}` : ""}${hint}`);
}

/**
 * A backend over an S3-compatible bucket. Throws at once on missing bucket
 * or credentials, naming what is missing.
 */
export function s3Backend(options: S3BackendOptions): ObjectBackend {
  const missing: string[] = [];
  if (!options?.bucket) missing.push("bucket (OBJSTORE_BUCKET)");
  if (!options?.accessKeyId) missing.push("accessKeyId (AWS_ACCESS_KEY_ID)");
  if (!options?.secretAccessKey) missing.push("secretAccessKey (AWS_SECRET_ACCESS_KEY)");
  if (missing.length) throw new TypeError(`S3 backend: missing ${missing.join(", ")}`);
  const region = options.region || "us-east-1";
  const prefix = options.prefix ?? "";
  const pageSize = options.pageSize ?? 1000;
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 1000) {
    throw new TypeError(`S3 backend: pageSize must be an integer in 1..1000 (got ${options.pageSize})`);
  }
  let base: string;
  if (options.endpoint) {
    let u: URL;
    try {
      u = new URL(options.endpoint);
    } catch {
      throw new TypeError(`S3 backend: endpoint ${JSON.stringify(options.endpoint)} is not a URL`);
    }
    base = `${u.origin}${u.pathname.replace(/\/+$/, "")}/${encodeURIComponent(options.bucket)}`;
  } else {
    base = `https://${options.bucket}.s3.${region}.amazonaws.com`;
  }
  const aws = new AwsClient({
    accessKeyId: options.accessKeyId,
    secretAccessKey: options.secretAccessKey,
    sessionToken: options.sessionToken,
    service: "s3",
    region,
    retries: options.retries ?? 5,
  });

  return {
    describe: `s3:${base}/${prefix}`,
    async probe(signal?: AbortSignal): Promise<void> {
      const q = new URLSearchParams({ "list-type": "2", prefix, "max-keys": "1" });
      let res: Response;
      try {
        res = await aws.fetch(`${base}?${q}`, { signal });
      } catch (e) {
        throw new Error(`S3 backend: cannot reach ${base}: ${(e as Error).message}`);
      }
      if (!res.ok) throw await s3Error(res, `ListObjectsV2 ${base}?prefix=${prefix}`);
      await res.body?.cancel();
    },
    async *list(signal?: AbortSignal): AsyncIterable<ObjectEntry> {
      let token: string | undefined;
      do {
        const q = new URLSearchParams({ "list-type": "2", prefix, "max-keys": String(pageSize) });
        if (token) q.set("continuation-token", token);
        const res = await aws.fetch(`${base}?${q}`, { signal });
        if (!res.ok) throw await s3Error(res, `ListObjectsV2 ${base}?prefix=${prefix}`);
        const page = parseListPage(await res.text());
        yield* page.objects;
        token = page.nextToken;
      } while (token);
    },
    async *read(entry: ObjectEntry, offset: number, signal: AbortSignal): AsyncIterable<Uint8Array> {
      const headers: Record<string, string> = { "if-match": entry.etag };
      if (offset > 0) headers.range = `bytes=${offset}-`;
      const res = await aws.fetch(`${base}/${encodeKey(entry.key)}`, { headers, signal });
      if (res.status === 412) {
        await res.body?.cancel();
        throw new ObjectChangedError(entry.key, `If-Match ${entry.etag} failed`);
      }
      if (res.status === 404) {
        await res.body?.cancel();
        throw new ObjectChangedError(entry.key, "object is gone");
      }
      if (!res.ok) throw await s3Error(res, `GET ${entry.key}`);
      if (!res.body) throw new Error(`S3 GET ${entry.key}: empty body`);
      // A server that ignores Range answers 200 with the whole object: skip to the offset.
      let skip = offset > 0 && res.status === 200 ? offset : 0;
      let pos = offset;
      const reader = res.body.getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          let chunk = value;
          if (skip > 0) {
            const n = Math.min(skip, chunk.length);
            skip -= n;
            chunk = chunk.subarray(n);
            if (chunk.length === 0) continue;
          }
          pos += chunk.length;
          yield chunk;
        }
      } finally {
        await reader.cancel().catch(() => {});
      }
      if (pos !== entry.size) throw new ObjectChangedError(entry.key, `body ended at byte ${pos} of ${entry.size}`);
    },
  };
}
