/**
 * The store URLs splitlease takes, in one place: each backend's display
 * name and URL schemes, and the messages for a URL no backend takes (a
 * near miss named with its fix). The CLI, the examples' launcher
 * (`examples/serve.ts`), `NatsStore.connect` and `PostgresStore.connect`
 * take their schemes and their wrong-scheme messages from here, so every
 * one of them names every scheme the others accept.
 *
 * A backend is one entry of {@linkcode STORE_URL_KINDS}; how a program
 * connects to it is wired outside `src/` (the runtime adapters:
 * `cli/store_backends.ts` maps each entry's `id` to its store and job
 * catalog, and fails to type-check until a new entry is wired).
 *
 * @module
 */
import { SplitleaseError } from "../errors.ts";
import { nearestName } from "../util/options.ts";
import { hostOf, redactUrl } from "../util/urls.ts";

/**
 * One URL scheme of a backend: the scheme (without `://`), what it
 * reaches, and the words people write for it by mistake.
 *
 * @example
 * ```ts
 * import type { StoreUrlScheme } from "./store_urls.ts";
 * const nats: StoreUrlScheme = { scheme: "nats", means: "the client port", aliases: ["tcp"] };
 * ```
 */
export interface StoreUrlScheme {
  /** The scheme, lower case, without `://`. */
  readonly scheme: string;
  /** What a URL of this scheme reaches, in messages. */
  readonly means: string;
  /** Schemes that mean this one but are not it (`tcp` for `nats`): a URL with one is answered "did you mean …". */
  readonly aliases?: readonly string[];
}

/**
 * A coordination backend as its URLs name it: an id, a display name, its
 * schemes, whether several URLs name one store, and how a program connects
 * to it (for messages).
 *
 * @example
 * ```ts
 * import { STORE_URL_KINDS } from "./store_urls.ts";
 * console.log(STORE_URL_KINDS.map((k) => `${k.name}: ${k.schemes.map((s) => s.scheme).join(", ")}`));
 * ```
 */
export interface StoreUrlKind {
  /** Stable id (`nats`, `postgres`): the key the adapters wire a connection to. */
  readonly id: string;
  /** Display name in messages (`NATS`, `PostgreSQL`). */
  readonly name: string;
  /** Its schemes, the preferred first. */
  readonly schemes: readonly StoreUrlScheme[];
  /**
   * Whether a comma-separated list of URLs names one store (the nodes of a
   * cluster); `false`: one URL, whose commas are its own (a multi-host
   * PostgreSQL URL).
   */
  readonly many: boolean;
  /** The port its servers listen on by default (a bare `host:port` with it is taken for this backend). */
  readonly defaultPort: number;
  /** What a URL of it needs after `host:port`, for a suggested URL (`/<database>`). */
  readonly pathHint?: string;
  /** How a program connects with one of its URLs, for messages. */
  readonly connect: string;
}

/** NATS JetStream KV: the client port over TCP (TLS), or a WebSocket listener. */
export const NATS_URLS = {
  id: "nats",
  name: "NATS",
  schemes: [
    { scheme: "nats", means: "the client port", aliases: ["tcp", "nat", "nast", "natss"] },
    { scheme: "tls", means: "the client port over TLS", aliases: ["nats+tls", "ssl"] },
    { scheme: "ws", means: "a WebSocket listener", aliases: ["websocket"] },
    { scheme: "wss", means: "a WebSocket listener over TLS", aliases: ["websockets"] },
  ],
  many: true,
  defaultPort: 4222,
  connect: "NatsStore.connect (@splitlease/splitlease/nats; nats:// and tls:// with tcpTransport() from @splitlease/splitlease/nats/tcp)",
} as const satisfies StoreUrlKind;

/** PostgreSQL: one database (libpq's URL, `?sslmode=` and multi-host lists included). */
export const POSTGRES_URLS = {
  id: "postgres",
  name: "PostgreSQL",
  schemes: [
    { scheme: "postgres", means: "a database", aliases: ["pg", "psql", "postgre", "postgress", "pgsql"] },
    { scheme: "postgresql", means: "a database" },
  ],
  many: false,
  defaultPort: 5432,
  pathHint: "/<database>",
  connect: "PostgresStore.connect (@splitlease/splitlease/postgres)",
} as const satisfies StoreUrlKind;

/** Redis: one server (`redis://`, or `rediss://` over TLS). */
export const REDIS_URLS = {
  id: "redis",
  name: "Redis",
  schemes: [
    { scheme: "redis", means: "a server", aliases: ["resp", "valkey", "reds", "keydb"] },
    { scheme: "rediss", means: "a server over TLS", aliases: ["redis+tls", "redistls"] },
  ],
  many: false,
  defaultPort: 6379,
  connect: "RedisStore.connect (@splitlease/splitlease/redis)",
} as const satisfies StoreUrlKind;

/**
 * Every backend splitlease connects to by URL, the one list every
 * scheme message is made from.
 *
 * @example
 * ```ts
 * import { STORE_URL_KINDS, storeSchemesText } from "./store_urls.ts";
 * console.log(storeSchemesText(STORE_URL_KINDS));
 * // "nats://, tls://, ws:// or wss:// URLs (NATS), one postgres:// or postgresql:// URL (PostgreSQL), or one redis:// or rediss:// URL (Redis)"
 * ```
 */
export const STORE_URL_KINDS = [NATS_URLS, POSTGRES_URLS, REDIS_URLS] as const satisfies readonly StoreUrlKind[];

/**
 * The id of a backend of {@linkcode STORE_URL_KINDS} (`"nats" | "postgres"`):
 * what the adapters key their wiring by, so a new entry must be wired.
 *
 * @example
 * ```ts
 * import type { StoreKindId } from "./store_urls.ts";
 * const id: StoreKindId = "postgres";
 * ```
 */
export type StoreKindId = (typeof STORE_URL_KINDS)[number]["id"];

const SCHEME = /^([a-z][a-z0-9+.-]*):\/\//i;
/** `host`, `host:port`, `[v6]:port`, optionally with credentials: a URL someone forgot the scheme of. */
const BARE_HOST = /^(?:[^@/\s]+@)?(\[[0-9a-f:.]+\]|[a-z0-9][a-z0-9.-]*)(?::(\d{1,5}))?\/?$/i;

/**
 * The scheme of `url`, lower case, without `://` (undefined when it has none).
 *
 * @example
 * ```ts
 * import { schemeOf } from "./store_urls.ts";
 * schemeOf("NATS://127.0.0.1:4222"); // "nats"
 * schemeOf("127.0.0.1:4222"); // undefined
 * ```
 */
export function schemeOf(url: string): string | undefined {
  return SCHEME.exec(url.trim())?.[1].toLowerCase();
}

/**
 * Whether a listener at `url` is worth asking what it is: an `http://` or
 * `https://` URL, or a bare `host:port` (a URL of another scheme is no
 * nats-server listener's).
 *
 * @example
 * ```ts
 * import { probeableUrl } from "./store_urls.ts";
 * probeableUrl("http://127.0.0.1:8222"); // true
 * probeableUrl("memcached://cache:11211"); // false
 * ```
 */
export function probeableUrl(url: string): boolean {
  const scheme = schemeOf(url);
  return scheme === undefined ? BARE_HOST.test(url.trim()) : scheme === "http" || scheme === "https";
}

/**
 * The backend whose schemes include `url`'s, if any.
 *
 * @example
 * ```ts
 * import { storeUrlKind } from "./store_urls.ts";
 * storeUrlKind("postgresql://app@db/app")?.name; // "PostgreSQL"
 * ```
 */
export function storeUrlKind(url: string, kinds: readonly StoreUrlKind[] = STORE_URL_KINDS): StoreUrlKind | undefined {
  const scheme = schemeOf(url);
  return scheme === undefined ? undefined : kinds.find((k) => k.schemes.some((s) => s.scheme === scheme));
}

/**
 * `schemes` as a phrase: `ws:// or wss://`, `nats://, tls://, ws:// or wss://`.
 *
 * @example
 * ```ts
 * import { schemeList } from "./store_urls.ts";
 * schemeList(["ws", "wss"]); // "ws:// or wss://"
 * ```
 */
export function schemeList(schemes: readonly string[]): string {
  const s = schemes.map((x) => `${x}://`);
  return s.length <= 1 ? s.join("") : `${s.slice(0, -1).join(", ")} or ${s[s.length - 1]}`;
}

/**
 * Every scheme of `kinds`, grouped by backend:
 * `nats://, tls://, ws:// or wss:// URLs (NATS), or one postgres:// or postgresql:// URL (PostgreSQL)`.
 *
 * @example
 * ```ts
 * import { NATS_URLS, storeSchemesText } from "./store_urls.ts";
 * storeSchemesText([NATS_URLS]); // "nats://, tls://, ws:// or wss:// URLs (NATS)"
 * ```
 */
export function storeSchemesText(kinds: readonly StoreUrlKind[] = STORE_URL_KINDS): string {
  const parts = kinds.map((k) => `${k.many ? "" : "one "}${schemeList(k.schemes.map((s) => s.scheme))} URL${k.many ? "s" : ""} (${k.name})`);
  return parts.length <= 1 ? parts.join("") : `${parts.slice(0, -1).join(", ")}, or ${parts[parts.length - 1]}`;
}

/**
 * Splits a comma-separated store setting (`--servers`, `STORE_URL`) into
 * URLs: one URL for a backend that takes one (its commas are its own), else
 * each comma-separated part, trimmed.
 *
 * @example
 * ```ts
 * import { splitStoreUrls } from "./store_urls.ts";
 * splitStoreUrls("nats://a:4222, nats://b:4222"); // ["nats://a:4222", "nats://b:4222"]
 * splitStoreUrls("postgres://app@h1,h2/app"); // ["postgres://app@h1,h2/app"]
 * ```
 */
export function splitStoreUrls(given: string, kinds: readonly StoreUrlKind[] = STORE_URL_KINDS): string[] {
  const text = given.trim();
  const kind = storeUrlKind(text, kinds);
  if (kind && !kind.many) return text === "" ? [] : [text];
  return text.split(",").map((s) => s.trim()).filter(Boolean);
}

/** `<scheme>://<rest>` for a suggestion: credentials hidden, the path a URL of `kind` needs added. */
function suggest(rest: string, scheme: string, kind: StoreUrlKind): string {
  const r = rest.replace(/\/$/, "");
  return redactUrl(`${scheme}://${r}${kind.pathHint && !r.includes("/") ? kind.pathHint : ""}`);
}

/** The scheme (and its backend) that `word` most likely means, by alias or spelling. */
function nearestScheme(word: string, kinds: readonly StoreUrlKind[]): { scheme: string; kind: StoreUrlKind } | undefined {
  const w = word.toLowerCase();
  for (const kind of kinds) {
    for (const s of kind.schemes) if (s.aliases?.includes(w)) return { scheme: s.scheme, kind };
  }
  const all = kinds.flatMap((kind) => kind.schemes.map((s) => ({ scheme: s.scheme, kind })));
  // Short schemes are an edit or two from each other (ws, wss, tls): a short word is taken for one only
  // when it starts with the same letter (wx → ws); tcp is an alias of nats, not a slip of tls.
  const near = nearestName(w, all.map((x) => x.scheme));
  const hit = near === undefined ? undefined : all.find((x) => x.scheme === near);
  if (!hit) return undefined;
  const d = Math.abs(hit.scheme.length - w.length);
  return d <= 2 && (w.length > 3 || hit.scheme.length > 3 || w[0] === hit.scheme[0]) ? hit : undefined;
}

/**
 * What `url` most likely meant, as a clause to append to a wrong-URL
 * message (`""` when nothing is near): `did you mean nats://h:4222?` for a
 * misspelt or missing scheme (a bare `host:port` is taken for the backend
 * whose default port it names, else for the first), and for `http://` and
 * `https://` which listeners a store reaches (a probe of the listener, when
 * one answers, says which it is: `src/nats/listener.ts`).
 *
 * @example
 * ```ts
 * import { storeUrlHint } from "./store_urls.ts";
 * storeUrlHint("nat://127.0.0.1:4222"); // "did you mean nats://127.0.0.1:4222?"
 * storeUrlHint("127.0.0.1:5432"); // "it has no scheme: did you mean postgres://127.0.0.1:5432/<database>?"
 * ```
 */
export function storeUrlHint(url: string, kinds: readonly StoreUrlKind[] = STORE_URL_KINDS): string {
  const text = url.trim();
  const scheme = schemeOf(text);
  if (scheme === undefined) {
    const bare = BARE_HOST.exec(text);
    if (bare) {
      const port = bare[2] === undefined ? undefined : Number(bare[2]);
      const kind = kinds.find((k) => k.defaultPort === port) ?? kinds.find((k) => k.many) ?? kinds[0];
      return kind ? `it has no scheme: did you mean ${suggest(text, kind.schemes[0].scheme, kind)}?` : "it has no scheme";
    }
    // "nats:host:4222", "nats:/host:4222": a scheme without its "//".
    const m = /^([a-z][a-z0-9+.-]*):\/?(?!\/)/i.exec(text);
    const near = m ? nearestScheme(m[1], kinds) : undefined;
    return near ? `did you mean ${suggest(text.slice(m![0].length), near.scheme, near.kind)}?` : "it has no scheme";
  }
  const rest = text.replace(SCHEME, "");
  if (scheme === "http" || scheme === "https") {
    const names = kinds.map((k) => k.name);
    const all = names.length <= 1 ? names.join("") : `${names.slice(0, -1).join(", ")} and ${names[names.length - 1]}`;
    return `${all} take no HTTP URL (nats-server's HTTP ports are its monitoring ` +
      `port, which takes no clients, and its WebSocket listener: ${scheme === "https" ? "wss" : "ws"}://${hostOf(text)})`;
  }
  if (kinds.some((k) => k.schemes.some((s) => s.scheme === scheme))) return "";
  const near = nearestScheme(scheme, kinds);
  return near ? `did you mean ${suggest(rest, near.scheme, near.kind)}?` : "";
}

function invalid(message: string): SplitleaseError {
  return new SplitleaseError("INVALID_CONFIG", message);
}

/** `"url"` for messages, credentials hidden. */
function shown(url: unknown): string {
  return typeof url === "string" ? JSON.stringify(redactUrl(url.trim())) : String(url);
}

/** Options of {@linkcode wrongStoreUrlMessage}. */
export interface WrongUrlOptions {
  /** The schemes `accepted` takes here, as a phrase (default: all of its schemes). */
  acceptedText?: string;
  /** What a probe found listening at the URL (replaces the guess of {@linkcode storeUrlHint}). */
  found?: string;
  /** The backends the message may name (default {@linkcode STORE_URL_KINDS}). */
  kinds?: readonly StoreUrlKind[];
}

/**
 * The message for a URL that `accepted` (a backend, or some of its
 * schemes) does not take: what it is instead (another backend's URL, and
 * how to connect to that), or what it most likely meant
 * ({@linkcode storeUrlHint}, or what a probe `found` there). `who` names
 * the setting (`server`, `url`).
 *
 * @example
 * ```ts
 * import { NATS_URLS, wrongStoreUrlMessage } from "./store_urls.ts";
 * wrongStoreUrlMessage("postgres://db/app", NATS_URLS, "server");
 * // 'server "postgres://db/app" is a PostgreSQL URL, not a NATS one (nats://, tls://, ws:// or wss://): connect to PostgreSQL with PostgresStore.connect (...)'
 * ```
 */
export function wrongStoreUrlMessage(url: unknown, accepted: StoreUrlKind, who: string, options: WrongUrlOptions = {}): string {
  const kinds = options.kinds ?? STORE_URL_KINDS;
  const acceptedText = options.acceptedText ?? schemeList(accepted.schemes.map((s) => s.scheme));
  const head = `${who} ${shown(url)}`;
  if (typeof url !== "string") return `${head} is not a ${accepted.name} URL: give ${acceptedText}`;
  const other = storeUrlKind(url, kinds);
  if (other && other.id !== accepted.id) {
    return `${head} is a ${other.name} URL, not a ${accepted.name} one (${acceptedText}): connect to ${other.name} with ${other.connect}`;
  }
  const hint = options.found ?? storeUrlHint(url, kinds);
  return `${head} is not a ${accepted.name} URL: give ${acceptedText}${hint ? `; ${hint}` : ""}`;
}

/**
 * The backend of a store setting's URLs (the CLI's `--servers`, the
 * launcher's `STORE_URL`): every URL must be of one backend, and a backend
 * that takes one URL gets one. Throws `INVALID_CONFIG` naming the URL, every
 * scheme `kinds` take and the likely fix (or what a probe found listening
 * at it: `probed`, by URL).
 *
 * @example
 * ```ts
 * import { storeKindOfUrls } from "./store_urls.ts";
 * storeKindOfUrls(["nats://a:4222", "nats://b:4222"], "--servers").name; // "NATS"
 * ```
 */
export function storeKindOfUrls(
  urls: readonly string[],
  what: string,
  kinds: readonly StoreUrlKind[] = STORE_URL_KINDS,
  probed?: ReadonlyMap<string, string>,
): StoreUrlKind {
  const all = storeSchemesText(kinds);
  if (urls.length === 0) throw invalid(`${what} names no store: give ${all}`);
  let seen: StoreUrlKind | undefined;
  for (const url of urls) {
    const kind = storeUrlKind(url, kinds);
    if (!kind) {
      const hint = probed?.get(url) ?? storeUrlHint(url, kinds);
      throw invalid(`${what} ${shown(url)} is not a store URL: give ${all}${hint ? `; ${hint}` : ""}`);
    }
    if (seen && seen.id !== kind.id) {
      throw invalid(`${what} mixes ${seen.name} and ${kind.name} URLs (${shown(url)}): one store, one kind of URL (${all})`);
    }
    seen = kind;
  }
  if (!seen!.many && urls.length > 1) {
    throw invalid(`${what} gives ${urls.length} ${seen!.name} URLs: a ${seen!.name} store is one URL (one database)`);
  }
  return seen!;
}
