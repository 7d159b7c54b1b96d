/**
 * `tls://` end to end, as a user configures it by URL (issue 40, item 11): a
 * nats-server whose client port requires TLS, with a certificate signed by a
 * CA this test creates, reached through `transportFor` — which picks the TCP
 * transport by scheme — by workers configured the way the examples are
 * (`STORE_URL`, examples/serve.ts) on Deno and Node, and by the CLI. The
 * runtimes trust the CA the way OPERATIONS says (`DENO_CERT`,
 * `NODE_EXTRA_CA_CERTS`). A planted bug that had `transportFor` ignore a
 * `tls://`-only list survived: every tls:// test passed `tcpTransport()`
 * itself (tests/unit/transport_for_test.ts checks the choice alone).
 */
import assert from "node:assert/strict";
import { freePort, NatsServer } from "../helpers/nats_server.ts";
import { makeCertificates } from "../helpers/certs.ts";
import { runCmd } from "../helpers/cmd.ts";
import { bin, bundleForNode, root } from "../helpers/worker_procs.ts";
import { cli } from "../ops/operator_session.ts";

const opts = { sanitizeResources: false, sanitizeOps: false };
const NODE_FIXTURE = "dist/fixtures/serve_env.mjs";

Deno.test({
  name: "tls:// end to end: Deno and Node workers configured by STORE_URL and the CLI reach a TLS-only client port with the test's CA",
  ...opts,
  fn: async () => {
    await bundleForNode("tests/tcp/fixtures/serve_env.ts", NODE_FIXTURE);
    const dir = await Deno.makeTempDir({ prefix: "splitlease-tls-e2e-" });
    try {
      await makeCertificates(dir);
      const ca = `${dir}/tls/ca.crt`;
      await using server = await NatsServer.start({ extra: `tls { cert_file: "${dir}/tls/tls.crt", key_file: "${dir}/tls/tls.key" }` });
      const url = `tls://localhost:${server.clientPort}`;
      const job = "tls-e2e";
      const base = { PATH: Deno.env.get("PATH") ?? "", HOME: Deno.env.get("HOME") ?? "/tmp", NO_COLOR: "1", STORE_URL: url, JOB: job, SPLITS: "6" };
      // Two workers of one job: Deno trusts the CA through DENO_CERT, Node through NODE_EXTRA_CA_CERTS.
      const worker = (cmd: string, args: string[], env: Record<string, string>, name: string) =>
        runCmd(cmd, args, { cwd: root, env: { ...base, ...env, INSTANCE: name, PORT: String(freePort()) }, timeoutMs: 60_000, check: false, what: `the ${name} worker` });
      const [deno, node] = await Promise.all([
        worker(bin("deno"), ["run", "-A", "tests/tcp/fixtures/serve_env.ts"], { DENO_CERT: ca }, "w-deno"),
        worker(bin("node"), [NODE_FIXTURE], { NODE_EXTRA_CA_CERTS: ca }, "w-node"),
      ]);
      assert.equal(deno.code, 0, `the Deno worker completes the job over tls://\n${deno.out.slice(-3000)}`);
      assert.equal(node.code, 0, `the Node worker completes the job over tls://\n${node.out.slice(-3000)}`);
      assert.match(deno.out + node.out, /"msg":"Job complete"/);

      // The CLI reads the finished job over the same URL.
      const status = await cli("deno", ["status", "--json", "-s", url, "-j", job], { DENO_CERT: ca });
      assert.equal(status.code, 0, status.out);
      const view = JSON.parse(status.stdout);
      assert.deepEqual([view.plan?.outcome, view.counts?.completed], ["allComplete", 6], status.stdout);
      const jobs = await cli("deno", ["jobs", "--json", "-s", url], { DENO_CERT: ca });
      assert.equal(jobs.code, 0, jobs.out);
      assert.deepEqual(JSON.parse(jobs.stdout).jobs.map((j: { job: string; state: string }) => [j.job, j.state]), [[job, "complete"]]);

      // Without the CA the server's certificate is refused: the connection really is TLS, verified.
      const untrusted = await cli("deno", ["status", "-s", url, "-j", job, "--op-timeout-ms", "500"]);
      assert.equal(untrusted.code, 1, untrusted.out);
      assert.match(untrusted.out, /certificate/i);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
