/**
 * A bundle of dist/ imported by URL, as the README shows: dist/ served on a
 * loopback HTTP server, and a Deno program outside the repository (no
 * config, no node_modules, an empty module cache) type-checked by URL with
 * `--allow-import=127.0.0.1:<port>`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { type CmdOptions, runCmd } from "../helpers/cmd.ts";
import { withTimeout } from "../helpers/deadline.ts";
import { bin, packOnce, root, tempDir } from "./pack.ts";

/** Content types a static server should send (Deno ignores declarations served as anything else). */
function contentType(path: string): string {
  if (path.endsWith(".d.ts")) return "application/typescript; charset=utf-8";
  if (path.endsWith(".js")) return "text/javascript; charset=utf-8";
  return "application/octet-stream";
}

/** dist/ on a loopback HTTP server; shut down (bounded) on dispose. */
export class DistServer implements AsyncDisposable {
  /** The paths asked for, in order. */
  readonly served: string[] = [];
  readonly #server: Deno.HttpServer<Deno.NetAddr>;

  private constructor() {
    this.#server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
      const path = new URL(req.url).pathname;
      this.served.push(path);
      if (!/^\/[\w.-]+$/.test(path)) return new Response("not found", { status: 404 });
      try {
        const body = await Deno.readFile(`${root}dist${path}`);
        return new Response(body, { headers: { "content-type": contentType(path) } });
      } catch {
        return new Response("not found", { status: 404 });
      }
    });
  }

  /**
   * Builds dist/ (through `npm pack`, once per process), checks that `bundle`
   * names its declarations for Deno on its first line (`@ts-self-types`), and
   * serves dist/.
   */
  static async start(bundle: string): Promise<DistServer> {
    await packOnce(); // builds dist/
    const head = (await Deno.readTextFile(`${root}dist/${bundle}`)).split("\n", 1)[0];
    assert.equal(head, `// @ts-self-types="./${declarations(bundle)}"`);
    return new DistServer();
  }

  /** `127.0.0.1:<port>`, what `--allow-import` names. */
  get host(): string {
    return `127.0.0.1:${this.#server.addr.port}`;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await withTimeout(this.#server.shutdown(), 15_000, "the loopback server of dist/ to shut down");
  }
}

/** `x.js` → `x.d.ts`. */
const declarations = (bundle: string) => bundle.replace(/\.js$/, ".d.ts");

/**
 * Writes `source` as main.ts into a fresh temp dir (outside the repository:
 * no deno.json, no node_modules, its own DENO_DIR) and returns the options
 * to run deno there.
 */
export async function programDir(prefix: string, source: string): Promise<CmdOptions> {
  const dir = tempDir(prefix);
  await Deno.writeTextFile(`${dir}/main.ts`, source);
  const env = { ...Deno.env.toObject(), DENO_DIR: `${dir}/.deno`, NO_COLOR: "1" };
  return { cwd: dir, env, timeoutMs: 60_000 };
}

/**
 * `deno check` of main.ts by URL, and that deno fetched `bundle`'s
 * declarations (named by @ts-self-types). The program's @ts-expect-error
 * lines fail the check if the types are missing (any).
 */
export async function checkByUrl(dist: DistServer, bundle: string, opts: CmdOptions): Promise<void> {
  await runCmd(bin("deno"), ["check", `--allow-import=${dist.host}`, "main.ts"], { ...opts, what: "deno check by URL" });
  assert.ok(dist.served.includes(`/${declarations(bundle)}`), "deno fetched the declarations named by @ts-self-types");
}
