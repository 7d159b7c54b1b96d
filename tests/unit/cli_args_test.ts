// The CLI's command line (issue 31, item 7): --version, the nearest command
// or option for a typo, `jobs` without a job, `delete` only with --yes, and
// each command's own flags. The process test (tests/ops/cli_test.ts) runs
// the same through cli.ts.
import assert from "node:assert/strict";
import { parseArgs, UsageError, USAGE } from "../../src/cli/args.ts";

const env = { NATS_URL: "ws://127.0.0.1:1", JOB: "j" };
const usage = (argv: string[], e: Record<string, string> = env) => {
  try {
    parseArgs(argv, e);
  } catch (x) {
    assert.ok(x instanceof UsageError, String(x));
    return x.message;
  }
  assert.fail(`${argv.join(" ")} was accepted`);
};

Deno.test("cli args: --version, -V and version; help wins over both", () => {
  for (const argv of [["--version"], ["-V"], ["version"], ["status", "--version"]]) {
    assert.equal(parseArgs(argv, {}).command.name, "version", argv.join(" "));
  }
  assert.equal(parseArgs(["--version", "--help"], {}).command.name, "help");
  assert.match(USAGE, /--version, -V +the version/);
});

Deno.test("cli args: a mistyped command or option names the nearest one", () => {
  assert.equal(usage(["stauts"]), 'unknown command "stauts"; did you mean status?');
  assert.equal(usage(["requeu", "p1"]), 'unknown command "requeue"'.replace("requeue", "requeu") + "; did you mean requeue?");
  assert.equal(usage(["job"]), 'unknown command "job"; did you mean jobs?');
  assert.equal(usage(["frobnicate"]), 'unknown command "frobnicate"');
  assert.equal(usage(["status", "--sevrers", "ws://x:1"]), "unknown option --sevrers; did you mean --servers?");
  assert.equal(usage(["splits", "--sate", "owned"]), "unknown option --sate; did you mean --state?");
  assert.equal(usage(["status", "--jsno"]), "unknown option --jsno; did you mean --json?");
  assert.equal(usage(["status", "--bogus"]), "unknown option --bogus");
  assert.equal(usage(["status", "-x"]), "unknown option -x", "no long option suggested for a short one");
  assert.equal(usage(["splits", "--state", "ownd"]), 'unknown state "ownd"; did you mean owned?; states: runnable, owned, unclaimed, completed, quarantined, cancelled');
});

Deno.test("cli args: jobs needs no job (JOB is not read; --job lists that one); delete needs --yes", () => {
  assert.deepEqual(parseArgs(["jobs"], { NATS_URL: "ws://x:1", JOB: "from-env" }).options.job, "");
  assert.deepEqual(parseArgs(["jobs", "-j", "one"], { NATS_URL: "ws://x:1" }).options.job, "one");
  assert.match(usage(["jobs"], {}), /no store: give --servers or set STORE_URL or NATS_URL/);
  assert.match(usage(["delete"]), /^delete removes the job's records for good: add --yes to confirm/);
  assert.deepEqual(parseArgs(["delete", "--yes"], env).command, { name: "delete", yes: true, force: false });
  assert.deepEqual(parseArgs(["delete", "--yes", "--force"], env).command, { name: "delete", yes: true, force: true });
  assert.match(usage(["delete", "--yes"], { NATS_URL: "ws://x:1" }), /no job: give --job or set JOB/);
  assert.equal(usage(["status", "--yes"]), "--yes goes with delete only");
  assert.equal(usage(["jobs", "--force"]), "--force goes with delete only");
  assert.equal(usage(["status", "--port", "1"]), "--port goes with ui only");
  assert.equal(usage(["ui", "--all"]), "--all goes with requeue only");
  // status --full: every record read, whatever the job's size.
  assert.deepEqual(parseArgs(["status"], env).command, { name: "status", full: false });
  assert.deepEqual(parseArgs(["status", "--full"], env).command, { name: "status", full: true });
  assert.equal(usage(["splits", "--full"]), "--full goes with status only");
});

Deno.test("cli args: a postgres:// URL from --servers or STORE_URL is one server, commas and all; STORE_URL comes before NATS_URL", () => {
  assert.deepEqual(parseArgs(["status", "-j", "j"], { STORE_URL: "postgres://u@h1:5432,h2:5432/db" }).options.servers, ["postgres://u@h1:5432,h2:5432/db"]);
  assert.deepEqual(parseArgs(["status", "-j", "j", "-s", "postgresql://u@h/db"], {}).options.servers, ["postgresql://u@h/db"]);
  assert.deepEqual(parseArgs(["status", "-j", "j"], { STORE_URL: "nats://a:1", NATS_URL: "ws://b:1" }).options.servers, ["nats://a:1"]);
});
