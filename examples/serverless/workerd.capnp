# Runs examples/serverless/cloudflare_worker.ts in workerd, Cloudflare's
# open-source Workers runtime, the way the platform would: the esbuild
# bundle as an ES module, configuration as bindings (read from this
# process's environment here, `[vars]` in wrangler.toml on Cloudflare).
#
#   node_modules/.bin/esbuild examples/serverless/cloudflare_worker.ts --bundle --format=esm \
#     --platform=neutral --main-fields=module,main --conditions=workerd,worker,browser \
#     --external:crypto --outfile=dist/serverless/cloudflare_worker.js
#   NATS_URL=ws://127.0.0.1:8080 node_modules/.bin/workerd serve --experimental examples/serverless/workerd.capnp
#   curl -X POST http://127.0.0.1:8787/          # one slice, answered as JSON
#   curl -X POST http://127.0.0.1:8788/          # one scheduled event (see `cron` below)
#
# (`--external:crypto`: tweetnacl mentions Node's crypto module in a branch
# it never takes where Web Crypto exists, as it does on Workers.
# `--experimental`: the cron worker's service binding calls scheduled(),
# which needs the experimental flag service_binding_extra_handlers.)
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "main", worker = .mainWorker),
    (name = "cron", worker = .cronWorker),
    # Lets the worker's WebSocket reach nats-server on this machine (the
    # default allows public addresses only).
    (name = "internet", network = (allow = ["public", "private", "local"])),
  ],
  sockets = [
    (name = "http", address = "127.0.0.1:8787", http = (), service = "main"),
    (name = "cron", address = "127.0.0.1:8788", http = (), service = "cron"),
  ],
);

const mainWorker :Workerd.Worker = (
  modules = [(name = "worker.js", esModule = embed "../../dist/serverless/cloudflare_worker.js")],
  compatibilityDate = "2025-09-01",
  bindings = [
    (name = "NATS_URL", fromEnvironment = "NATS_URL"),
    (name = "JOB", fromEnvironment = "JOB"),
    (name = "SPLITS", fromEnvironment = "SPLITS"),
    (name = "RECORDS", fromEnvironment = "RECORDS"),
    (name = "BATCH_MS", fromEnvironment = "BATCH_MS"),
    (name = "BUDGET_MS", fromEnvironment = "BUDGET_MS"),
    (name = "OP_TIMEOUT_MS", fromEnvironment = "OP_TIMEOUT_MS"),
    (name = "DRAIN_DEADLINE_MS", fromEnvironment = "DRAIN_DEADLINE_MS"),
    (name = "LEASE_MS", fromEnvironment = "LEASE_MS"),
    (name = "TOKEN", fromEnvironment = "TOKEN"),
  ],
);

# Stands in for Cron Triggers locally (cron_trigger.js): every request to
# it delivers one scheduled event to the main worker.
const cronWorker :Workerd.Worker = (
  modules = [(name = "cron.js", esModule = embed "cron_trigger.js")],
  compatibilityDate = "2025-09-01",
  compatibilityFlags = ["service_binding_extra_handlers"],
  bindings = [(name = "MAIN", service = "main")],
);
