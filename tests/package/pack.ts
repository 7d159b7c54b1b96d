/**
 * The npm package as a user gets it: `npm pack` (its `prepack` builds dist/)
 * once per test process, into a temp dir removed on unload.
 *
 * @module
 */
import { runCmd } from "../helpers/cmd.ts";
import { distReady } from "../helpers/worker_procs.ts";

/** Repository root (with a trailing slash). */
export const root: string = new URL("../../", import.meta.url).pathname;
/** A tool from node_modules/.bin. */
export const bin = (n: string): string => `${root}node_modules/.bin/${n}`;

/**
 * Environment for npm: node_modules/.bin first, so npm itself, the prepack
 * build and the consumer's install run on the Node 24 that npm installed
 * (the package needs Node >= 22), not on whatever `node` the machine has.
 */
export function npmEnv(): Record<string, string> {
  return { ...Deno.env.toObject(), PATH: `${root}node_modules/.bin:${Deno.env.get("PATH") ?? ""}`, NO_COLOR: "1" };
}

/** What `npm pack` produced. */
export interface Packed {
  /** Absolute path of the tarball. */
  tarball: string;
  /** Paths inside the package. */
  files: string[];
  /** The temp dir holding it (removed on unload). */
  dir: string;
}

const temps: string[] = [];
globalThis.addEventListener("unload", () => {
  for (const d of temps) {
    try {
      Deno.removeSync(d, { recursive: true });
    } catch { /* gone */ }
  }
});

/** A temp dir removed when the test process unloads. */
export function tempDir(prefix: string): string {
  const d = Deno.makeTempDirSync({ prefix });
  temps.push(d);
  return d;
}

let packed: Promise<Packed> | undefined;
/** `npm pack` of the repository (building dist/ through `prepack`), once per process. */
export function packOnce(): Promise<Packed> {
  packed ??= (async () => {
    const dir = tempDir("splitlease-pack-");
    // Built already by the test command (its build is this tree's; another build now would empty dist/ under the suites beside this one).
    const r = await runCmd("npm", ["pack", "--json", "--pack-destination", dir, ...(distReady ? ["--ignore-scripts"] : [])], {
      cwd: root,
      env: npmEnv(),
      timeoutMs: 180_000,
      what: "npm pack (prepack builds dist/)",
    });
    // The prepack build prints a line before npm's JSON.
    const json = JSON.parse(r.stdout.slice(r.stdout.indexOf("\n[") + 1));
    return {
      tarball: `${dir}/${json[0].filename}`,
      files: json[0].files.map((f: { path: string }) => f.path),
      dir,
    };
  })();
  return packed;
}
