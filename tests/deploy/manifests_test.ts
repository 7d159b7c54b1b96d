/**
 * The deployment kit (deploy/) against the code it deploys. No container
 * engine or cluster runs here, so most checks are static: the YAML parses as
 * Kubernetes reads it (YAML 1.1), the grace period, probes, ports, exit codes
 * and thresholds agree with the code's defaults, every metric the alert rules
 * and the KEDA trigger name is one /metrics renders, and each Dockerfile pins
 * package.json's runtime versions and starts the example worker in exec form
 * as a non-root user.
 *
 * Two checks run for real: nats-server 2.9 starts with
 * deploy/nats/nats-server.conf (certificates made here with openssl, paths
 * and ports moved to a temp dir) and workers on Deno, Bun and Node connect
 * over wss with the CA, reach their own job's bucket and are refused
 * another's; and each image's command (ENTRYPOINT, ENV, the files its COPY
 * lines bring, the repository's node_modules standing in for the deps stage)
 * runs with the env of job.yaml and deployment.yaml, so the Job's pods finish
 * the work and exit 0 while a Deployment's pod on the finished job idles,
 * ready, until SIGTERM.
 */
import { freePort, NATS_SERVER } from "../helpers/nats_server.ts";
import assert from "node:assert/strict";
import { parseAllDocuments } from "yaml";
import { parseCoordinatorConfig } from "../../admin.ts";
import { TUNABLE_DEFAULTS } from "../../src/coordinator/config.ts";
import { createApp, EXIT_PLAN_FAILED, EXIT_STALLED } from "../../host.ts";
import { DEFAULT_SHUTDOWN_MARGIN_MS } from "../../src/serve/serve_options.ts";
import { runCmd } from "../helpers/cmd.ts";
import { eachLine, parseLogLine } from "../helpers/lines.ts";
import { ScriptedCoordinator } from "../helpers/scripted_coordinator.ts";
import { waitFor, withTimeout } from "../helpers/worker_procs.ts";
import { leaderMetrics } from "./leader_metrics.ts";
import { makeCertificates } from "../helpers/certs.ts";

const root = new URL("../../", import.meta.url).pathname;
const bin = (n: string) => `${root}node_modules/.bin/${n}`;
const read = (path: string) => Deno.readTextFileSync(`${root}${path}`);
const pkg = JSON.parse(read("package.json")) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const ENTRY = "examples/object_store/main.ts";

// deno-lint-ignore no-explicit-any
type Yaml = any;

/** Every document of a YAML file, parsed as Kubernetes does (YAML 1.1); fails on any error or warning. */
function yamlDocs(path: string): Yaml[] {
  const docs = parseAllDocuments(read(path), { version: "1.1", prettyErrors: true });
  assert.ok(Array.isArray(docs), `${path} parses`);
  for (const d of docs) {
    assert.deepEqual([...d.errors, ...d.warnings].map((e) => e.message), [], `${path}: YAML errors or warnings`);
  }
  return docs.map((d) => d.toJS());
}

/** The code's defaults a manifest's numbers must agree with. */
const defaults = (() => {
  const c = parseCoordinatorConfig({ job: "j", instance: "i", fingerprint: "f" });
  return { drainDeadlineMs: c.drainDeadlineMs, opTimeoutMs: c.opTimeoutMs, maxInFlight: c.maxInFlight };
})();

/** Metric names of ours (`etl_coordination_*`) in a PromQL expression. */
function metricNames(expr: string): string[] {
  return [...new Set(expr.match(/\betl_coordination_[a-z_]+/g) ?? [])];
}

// --- Kubernetes manifests ------------------------------------------------------------

const K8S = ["deploy/k8s/deployment.yaml", "deploy/k8s/job.yaml", "deploy/k8s/keda-scaledobject.yaml", "deploy/k8s/observer.yaml"];

/** The one document of `kind` in `path`. */
function manifest(path: string, kind: string): Yaml {
  const docs = yamlDocs(path).filter((d) => d?.kind === kind);
  assert.equal(docs.length, 1, `${path} holds one ${kind}`);
  return docs[0];
}

/** The worker container of a pod template. */
function worker(podSpec: Yaml): Yaml {
  const c = podSpec.containers.find((c: Yaml) => c.name === "worker");
  assert.ok(c, "a container named worker");
  return c;
}

/**
 * Env of a container as the kubelet would set it for pod `podName` (fieldRefs, secrets, $(VAR) expansion).
 * A required secret key missing from `secrets` gets a placeholder; an optional one (`optional: true`) is
 * left unset, as the kubelet does when the Secret or its key does not exist.
 */
function resolveEnv(container: Yaml, pod: { name: string; index?: string; secrets: Record<string, string> }): Record<string, string> {
  const env: Record<string, string> = {};
  for (const e of container.env as Yaml[]) {
    let v: string;
    if (e.value !== undefined) {
      assert.equal(typeof e.value, "string", `env ${e.name} is a string in YAML 1.1 (quote numbers and booleans)`);
      v = e.value.replace(/\$\(([A-Z0-9_]+)\)/g, (_: string, n: string) => {
        assert.ok(n in env, `env ${e.name} refers to $(${n}), which must be defined before it`);
        return env[n];
      });
    } else if (e.valueFrom?.fieldRef) {
      const path = e.valueFrom.fieldRef.fieldPath;
      if (path === "metadata.name") v = pod.name;
      else if (path === "metadata.annotations['batch.kubernetes.io/job-completion-index']") v = pod.index ?? assert.fail("no index");
      else throw new Error(`env ${e.name}: unexpected fieldRef ${path}`);
    } else if (e.valueFrom?.secretKeyRef) {
      const k = `${e.valueFrom.secretKeyRef.name}/${e.valueFrom.secretKeyRef.key}`;
      if (!(k in pod.secrets) && e.valueFrom.secretKeyRef.optional === true) continue;
      v = pod.secrets[k] ?? `secret-${k}`;
    } else throw new Error(`env ${e.name}: no value`);
    env[e.name] = v;
  }
  return env;
}

/** Environment variable names the example worker (or the runtime) reads. */
function namesTheWorkerReads(): Set<string> {
  const src = ["examples/object_store/main.ts", "examples/object_store/config.ts"].map(read).join("\n");
  const names = new Set([...src.matchAll(/env\.([A-Z][A-Z0-9_]*)/g)].map((m) => m[1]));
  for (const m of src.matchAll(/intFromEnv\(env, "([A-Z0-9_]+)"/g)) names.add(m[1]);
  // Read by the runtimes: the CA bundle for wss.
  names.add("DENO_CERT");
  names.add("NODE_EXTRA_CA_CERTS");
  return names;
}

Deno.test("deploy: every YAML file parses as Kubernetes and Prometheus read it (YAML 1.1, no warnings)", () => {
  for (const path of K8S) {
    for (const doc of yamlDocs(path)) {
      assert.ok(doc.apiVersion && doc.kind && doc.metadata?.name, `${path}: apiVersion, kind and metadata.name`);
    }
  }
  const rules = yamlDocs("deploy/prometheus/alerts.yaml");
  assert.equal(rules.length, 1);
  assert.ok(Array.isArray(rules[0].groups) && rules[0].groups.length > 0, "a rule file: groups");
});

Deno.test("deploy: the Deployment and the Job agree with the code: grace period, probes, port, instance ids, exit codes, env", async () => {
  const reads = namesTheWorkerReads();
  // serve's shutdown deadline is drainDeadlineMs + shutdownMarginMs with the coordinator's drain default.
  assert.ok(
    read("src/serve/serve_core.ts").includes("options.drainDeadlineMs ?? TUNABLE_DEFAULTS.drainDeadlineMs"),
    "serve's drain default is the coordinator's",
  );
  assert.equal(TUNABLE_DEFAULTS.drainDeadlineMs, defaults.drainDeadlineMs);
  const app = createApp({ coordinator: new ScriptedCoordinator() });
  for (const [path, kind] of [["deploy/k8s/deployment.yaml", "Deployment"], ["deploy/k8s/job.yaml", "Job"]] as const) {
    const m = manifest(path, kind);
    const pod = m.spec.template.spec;
    const c = worker(pod);
    const env = resolveEnv(c, { name: "backfill-7c9f8-x2kqz", index: "0", secrets: {} });
    const where = `${path} (${kind})`;
    // SIGTERM: drain (drainDeadlineMs), serve's margin, then one leave write
    // (opTimeoutMs); then headroom for what follows the leave write (closing
    // the HTTP server and the NATS connection, the runtime's exit) and a slow
    // node: without it a worker that uses every budget is SIGKILLed mid-leave.
    const drain = env.DRAIN_DEADLINE_MS ? Number(env.DRAIN_DEADLINE_MS) : defaults.drainDeadlineMs;
    const HEADROOM_MS = 5000;
    const graceMs = drain + DEFAULT_SHUTDOWN_MARGIN_MS + defaults.opTimeoutMs + HEADROOM_MS;
    assert.equal(
      pod.terminationGracePeriodSeconds,
      graceMs / 1000,
      `${where}: terminationGracePeriodSeconds = (${drain} + ${DEFAULT_SHUTDOWN_MARGIN_MS} + ${defaults.opTimeoutMs} + ${HEADROOM_MS} headroom) ms`,
    );
    // Probes on routes the app serves, on the port the worker listens on.
    const port = c.ports.find((p: Yaml) => p.name === "http");
    assert.equal(String(port.containerPort), env.PORT ?? "8080", `${where}: containerPort is PORT`);
    for (const [probe, route] of [["startupProbe", "/healthz"], ["livenessProbe", "/healthz"], ["readinessProbe", "/readyz"]]) {
      assert.equal(c[probe].httpGet.path, route, `${where}: ${probe} on ${route}`);
      assert.equal(c[probe].httpGet.port, "http");
      assert.notEqual((await app.request(c[probe].httpGet.path)).status, 404, `${where}: the app serves ${route}`);
      assert.ok(read("src/http/probe_routes.ts").includes(`app.get("${route}"`), `src/http/probe_routes.ts routes ${route}`);
    }
    // Non-root, and no env the worker does not read (a typo would be silently ignored),
    // optional ones included (unset here: resolveEnv drops an optional secret it was not given).
    assert.equal(pod.securityContext.runAsNonRoot, true, `${where}: runAsNonRoot`);
    for (const name of (c.env as Yaml[]).map((e) => e.name as string)) {
      assert.ok(reads.has(name) || name === "JOB_INDEX", `${where}: env ${name} is read by ${ENTRY} or its runtime`);
    }
    // The operator token: from the job's Secret, optional, so a pod starts without it
    // (its operator routes then answer 403) and every operator action works with it.
    const token = (c.env as Yaml[]).find((e) => e.name === "DRAIN_TOKEN");
    assert.ok(token, `${where}: DRAIN_TOKEN is set (without it POST /drain and the operator actions answer 403)`);
    assert.deepEqual(token.valueFrom?.secretKeyRef, { name: `splitlease-${env.JOB}`, key: "drain-token", optional: true }, `${where}: DRAIN_TOKEN`);
    assert.equal(env.DRAIN_TOKEN, undefined, `${where}: without the Secret the env is unset`);
    assert.equal(env.STORE, "nats");
    assert.match(env.NATS_URL, /^wss:\/\//, `${where}: NATS over TLS`);
    // The CA bundle both runtimes read is the mounted CA.
    const ca = c.volumeMounts.find((v: Yaml) => pod.volumes.find((x: Yaml) => x.name === v.name)?.configMap?.name === "splitlease-nats-ca");
    assert.ok(ca, `${where}: the CA ConfigMap is mounted`);
    assert.equal(env.DENO_CERT, `${ca.mountPath}/ca.crt`);
    assert.equal(env.NODE_EXTRA_CA_CERTS, `${ca.mountPath}/ca.crt`);
    if (kind === "Deployment") {
      // The pod name: stable across container restarts in the pod.
      assert.equal(c.env.find((e: Yaml) => e.name === "INSTANCE").valueFrom.fieldRef.fieldPath, "metadata.name");
      assert.equal(env.INSTANCE, "backfill-7c9f8-x2kqz");
      assert.equal(env.AFTER_COMPLETION, "idle", `${where}: a finished job's pod idles instead of crash-looping`);
      assert.equal(env.AFTER_STALL, "wait", `${where}: a stalled job's pods wait for the requeue instead of crash-looping on exit 3`);
      assert.equal(m.spec.strategy.rollingUpdate.maxUnavailable, 0);
    } else {
      // The completion index: stable across a failed pod's replacement.
      assert.equal(env.INSTANCE, "backfill-0");
      assert.equal(m.spec.completionMode, "Indexed");
      assert.equal(m.spec.completions, m.spec.parallelism, "every index runs at once (each pod ends with the job)");
      assert.equal(m.spec.podReplacementPolicy, "Failed", "no replacement while its predecessor (same instance id) still runs");
      assert.equal(pod.restartPolicy, "Never", "podFailurePolicy needs restartPolicy Never");
      assert.equal(env.AFTER_COMPLETION ?? "exit", "exit", `${where}: a Job's pods exit when the job is complete`);
      const failJob = m.spec.podFailurePolicy.rules.find((r: Yaml) => r.action === "FailJob");
      assert.equal(failJob.onExitCodes.containerName, "worker");
      assert.deepEqual([...failJob.onExitCodes.values].sort(), [EXIT_STALLED, EXIT_PLAN_FAILED].sort(), "stalled and planner-failed fail the Job at once");
    }
  }
});

Deno.test("deploy: the observer holds no work, outlives a stall and idles after completion, in the Job's job with its input (one fingerprint), behind a Service", async () => {
  const reads = namesTheWorkerReads();
  const app = createApp({ coordinator: new ScriptedCoordinator() });
  const observer = manifest("deploy/k8s/observer.yaml", "Deployment");
  const service = manifest("deploy/k8s/observer.yaml", "Service");
  const job = manifest("deploy/k8s/job.yaml", "Job");
  const pod = observer.spec.template.spec;
  const c = worker(pod);
  const env = resolveEnv(c, { name: "backfill-observer-5d8f-abcde", secrets: {} });
  const jobC = worker(job.spec.template.spec);
  const jobEnv = resolveEnv(jobC, { name: "backfill-0-abcde", index: "0", secrets: {} });
  assert.equal(observer.spec.replicas, 1);
  assert.equal(env.MAX_IN_FLIGHT, "0", "a standby: holds no split");
  assert.equal(env.AFTER_STALL, "wait", "stays in the stalled job (exit 3 would take the page and the metrics with it)");
  assert.equal(env.AFTER_COMPLETION, "idle", "a Deployment's pod idles once the job is complete");
  assert.equal(env.INSTANCE, "backfill-observer-5d8f-abcde", "the pod name");
  for (const name of (c.env as Yaml[]).map((e) => e.name as string)) assert.ok(reads.has(name), `observer env ${name} is read by ${ENTRY}`);
  // The Job's job, store and input: the fingerprint is derived from the input configuration.
  for (const k of Object.keys(jobEnv)) {
    if (["INSTANCE", "JOB_INDEX", "AFTER_COMPLETION", "MAX_IN_FLIGHT"].includes(k)) continue;
    assert.equal(env[k], jobEnv[k], `observer env ${k} is the Job's`);
  }
  assert.equal(c.image, jobC.image, "the worker image");
  assert.deepEqual(c.env.find((e: Yaml) => e.name === "DRAIN_TOKEN").valueFrom.secretKeyRef, { name: "splitlease-backfill", key: "drain-token", optional: true });
  assert.equal(pod.terminationGracePeriodSeconds, job.spec.template.spec.terminationGracePeriodSeconds);
  assert.equal(pod.securityContext.runAsNonRoot, true);
  for (const [probe, route] of [["startupProbe", "/healthz"], ["livenessProbe", "/healthz"], ["readinessProbe", "/readyz"]]) {
    assert.equal(c[probe].httpGet.path, route, `observer ${probe} on ${route}`);
    assert.notEqual((await app.request(route)).status, 404);
  }
  // Its own pods only, and the Service reaches them on the app's port.
  const labels = observer.spec.template.metadata.labels;
  for (const [k, v] of Object.entries(observer.spec.selector.matchLabels)) assert.equal(labels[k], v, `the selector matches its pods (${k})`);
  for (const other of [job, manifest("deploy/k8s/deployment.yaml", "Deployment")]) {
    const theirs = other.spec.template.metadata.labels;
    assert.ok(
      Object.entries(observer.spec.selector.matchLabels).some(([k, v]) => theirs[k] !== v),
      `the observer's selector does not select ${other.kind} pods`,
    );
  }
  for (const [k, v] of Object.entries(service.spec.selector)) assert.equal(labels[k], v, `the Service selects the observer (${k})`);
  assert.equal(service.spec.ports[0].targetPort, "http");
  assert.equal(String(c.ports.find((p: Yaml) => p.name === "http").containerPort), env.PORT);
  assert.equal(labels["app.kubernetes.io/name"], "splitlease", "scraped with the workers (PodMonitor on app.kubernetes.io/name)");
});

Deno.test("deploy: KEDA scales the Deployment on a job-wide metric /metrics renders, counted once, one replica per MAX_IN_FLIGHT splits", async () => {
  const metrics = await leaderMetrics();
  const so = manifest("deploy/k8s/keda-scaledobject.yaml", "ScaledObject");
  const deployment = manifest("deploy/k8s/deployment.yaml", "Deployment");
  assert.equal(so.apiVersion, "keda.sh/v1alpha1");
  assert.equal(so.spec.scaleTargetRef.name, deployment.metadata.name);
  assert.ok(so.spec.minReplicaCount >= 1, "someone must lead and plan");
  const [trigger] = so.spec.triggers;
  assert.equal(trigger.type, "prometheus");
  const query: string = trigger.metadata.query;
  const names = metricNames(query);
  assert.ok(names.length > 0, query);
  for (const n of names) {
    assert.equal(metrics.types.get(n), "gauge", `${n} is a gauge /metrics renders`);
    assert.match(metrics.help.get(n)!, /exported by the leader only/, `${n} is job-wide`);
  }
  assert.match(query, /^max\(/, "replicas (old and new leader in one window) are aggregated with max, never summed");
  assert.match(query, new RegExp(`splitlease_job="${deployment.spec.template.spec.containers[0].env.find((e: Yaml) => e.name === "JOB").value}"`));
  assert.ok(metrics.labels.has("splitlease_job"));
  const env = resolveEnv(worker(deployment.spec.template.spec), { name: "p", secrets: {} });
  assert.equal(Number(trigger.metadata.threshold), Number(env.MAX_IN_FLIGHT ?? defaults.maxInFlight), "threshold = lanes per replica");
  for (const v of Object.values(trigger.metadata)) assert.equal(typeof v, "string", "KEDA metadata values are strings");
});

Deno.test("deploy: alert rules use only metrics /metrics renders and cover quarantine, stalls, self-fence, no leader, backlog and the planner", async () => {
  const metrics = await leaderMetrics();
  const [file] = yamlDocs("deploy/prometheus/alerts.yaml");
  const rules = file.groups.flatMap((g: Yaml) => g.rules) as Yaml[];
  const byName = new Map(rules.map((r) => [r.alert, r]));
  for (const r of rules) {
    assert.equal(typeof r.expr, "string", `${r.alert}: expr`);
    assert.ok(r.labels?.severity && r.annotations?.summary, `${r.alert}: severity and summary`);
    for (const n of metricNames(r.expr)) assert.ok(metrics.samples.has(n), `${r.alert}: ${n} is rendered by /metrics`);
    for (const by of r.expr.matchAll(/\b(?:by|on) \(([^)]*)\)/g)) {
      for (const l of by[1].split(",").map((s: string) => s.trim())) {
        assert.ok(metrics.labels.has(l) || ["namespace", "pod"].includes(l), `${r.alert}: label ${l} exists (or is a target label)`);
      }
    }
  }
  const uses = (alert: string, pattern: RegExp) => {
    const r = byName.get(alert);
    assert.ok(r, `alert ${alert}`);
    assert.match(r.expr, pattern, alert);
  };
  uses("SplitleaseSplitsQuarantined", /etl_coordination_splits_quarantined\)? > 0/);
  uses("SplitleaseSelfFenced", /increase\(etl_coordination_self_fences_total\[\w+\]\) > 0/);
  uses("SplitleaseNoLeader", /etl_coordination_leader/);
  uses("SplitleaseNoLeader", /etl_coordination_up/); // idle pods of a completed job do not page
  uses("SplitleaseBacklogNotShrinking", /etl_coordination_splits_unclaimed offset/);
  uses("SplitleasePlanFailing", /etl_coordination_plan_failures_total/);
  uses("SplitleasePlanFailed", new RegExp(`== ${EXIT_PLAN_FAILED}$`));
  // A stall: the job-wide gauge (exported by whatever leads during it: a waiting worker or the observer) and exit 3.
  uses("SplitleaseJobStalled", /etl_coordination_job_stalled\)? > 0/);
  uses("SplitleaseWorkerExitedStalled", new RegExp(`== ${EXIT_STALLED}$`));
  for (const name of ["SplitleaseJobStalled", "SplitleaseSplitsQuarantined"]) {
    assert.match(byName.get(name)!.for ?? "", /^\d+[smh]$/, `${name}: a for (tests/ops/stall_repair_test.ts keeps its metric up past it)`);
  }
  // Job-wide gauges come from the leader only: aggregated, never per pod.
  for (const r of rules) {
    for (const n of metricNames(r.expr)) {
      if (/exported by the leader only/.test(metrics.help.get(n) ?? "")) {
        assert.match(r.expr, new RegExp(`(max|sum) by \\([^)]*\\) \\(${n}`), `${r.alert} aggregates ${n} by job`);
      }
    }
  }
});

// --- Dockerfiles ---------------------------------------------------------------------------

interface Stage {
  from: string;
  name?: string;
  lines: string[];
}

/** Stages of a Dockerfile, continuation lines joined, comments dropped. */
function stages(path: string): Stage[] {
  const out: Stage[] = [];
  const joined = read(path).replace(/\\\n/g, " ").split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("#"));
  for (const l of joined) {
    const from = /^FROM (\S+)(?: AS (\S+))?$/i.exec(l);
    if (from) out.push({ from: from[1], name: from[2], lines: [] });
    else out.at(-1)!.lines.push(l);
  }
  return out;
}

const IMAGES = [
  { runtime: "deno", file: "deploy/docker/deno.Dockerfile", image: (v: string) => `denoland/deno:${v}` },
  { runtime: "bun", file: "deploy/docker/bun.Dockerfile", image: (v: string) => `oven/bun:${v}-slim` },
] as const;

Deno.test("deploy: each Dockerfile pins package.json's runtime, runs the object-store worker in exec form as a non-root uid", () => {
  for (const { runtime, file, image } of IMAGES) {
    const [deps, final, ...rest] = stages(file);
    assert.equal(rest.length, 0, `${file}: a deps stage and the image`);
    assert.equal(deps.from, `node:${pkg.devDependencies.node}-slim`, `${file}: the deps stage uses package.json's node`);
    assert.equal(final.from, image(pkg.devDependencies[runtime]), `${file}: ${runtime} ${pkg.devDependencies[runtime]} as in package.json`);
    // The deps stage: the lockfile's runtime dependencies plus the example's S3 client at its pinned version.
    const run = deps.lines.find((l) => l.startsWith("RUN "))!;
    assert.match(run, new RegExp(`npm pkg set dependencies\\.aws4fetch=${pkg.devDependencies.aws4fetch.replace(/\./g, "\\.")}\\b`));
    assert.match(run, /npm install --omit=dev --ignore-scripts/);
    assert.ok(deps.lines.includes("COPY package.json package-lock.json ./"), `${file}: installs from the lockfile`);
    // Exec form, the example as entry point, no shell.
    const ep = final.lines.find((l) => l.startsWith("ENTRYPOINT "));
    assert.ok(ep, `${file}: ENTRYPOINT`);
    const argv = JSON.parse(ep.slice("ENTRYPOINT ".length)) as string[];
    assert.ok(Array.isArray(argv), `${file}: ENTRYPOINT in exec form (a JSON array): SIGTERM reaches the runtime`);
    assert.equal(argv[0], runtime);
    assert.equal(argv.at(-1), ENTRY, `${file}: starts ${ENTRY}`);
    assert.ok(!argv.some((a) => /^(sh|bash|-c)$/.test(a)), `${file}: no shell wrapper`);
    assert.ok(!final.lines.some((l) => l.startsWith("CMD ")), `${file}: no CMD to append to the entry point`);
    Deno.statSync(`${root}${ENTRY}`);
    // A numeric non-root user, so Kubernetes' runAsNonRoot can verify it.
    const user = final.lines.filter((l) => l.startsWith("USER ")).at(-1);
    const uid = /^USER (\d+)(?::\d+)?$/.exec(user ?? "");
    assert.ok(uid && Number(uid[1]) > 0, `${file}: USER is a numeric non-root uid, got ${user}`);
    // Everything COPY brings exists, and the code it brings imports only what the deps stage installs.
    const copied = final.lines.filter((l) => /^COPY (?!--from)/.test(l)).flatMap((l) => l.split(/\s+/).slice(1, -1));
    for (const src of copied) Deno.statSync(`${root}${src}`);
    const installed = new Set([...Object.keys(pkg.dependencies), "aws4fetch"]);
    for (const f of tsFiles(copied)) {
      const code = read(f).replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
      // Import and export statements (not a "from" inside a string), and dynamic imports.
      for (const m of code.matchAll(/^(?:import\s|export\s+(?:type\s+)?[{*])[^;()]*?[\s}*]from\s*"([^".][^"]*)"|\bimport\(\s*"([^".][^"]*)"/gm)) {
        const spec = m[1] ?? m[2];
        if (spec.startsWith("node:")) continue;
        const name = spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0];
        assert.ok(installed.has(name), `${f} imports ${spec}, which the deps stage does not install`);
      }
    }
  }
});

/** .ts files under the given repository paths (files or directories), tests excluded. */
function tsFiles(paths: string[]): string[] {
  const out: string[] = [];
  const walk = (p: string) => {
    const st = Deno.statSync(`${root}${p}`);
    if (st.isDirectory) for (const e of Deno.readDirSync(`${root}${p}`)) walk(`${p}/${e.name}`);
    else if (p.endsWith(".ts") && !p.endsWith("_test.ts")) out.push(p);
  };
  for (const p of paths) walk(p);
  return out;
}

// --- For real: nats-server with the kit's config, and the images' commands -------------

interface Nats {
  wsUrl: string;
  ca: string;
  dir: string;
  stop(): Promise<void>;
}

const PASSWORDS = { backfill: "backfill-pass-1", events: "events-pass-2" };

/**
 * Starts nats-server with one of the kit's configs (`file`, with the
 * accounts.conf it includes), moved to `dir` and free loopback ports by
 * `moves` (each must match exactly once); resolves once healthy (`full`:
 * with a JetStream meta leader, for a cluster node).
 */
async function startFromKit(
  dir: string,
  tlsDir: string,
  file: string,
  moves: [string, string][],
  env: Record<string, string> = {},
  full = false,
): Promise<Nats> {
  let conf = read(file);
  const all: [string, string][] = [
    ['"/etc/nats/tls/tls.crt"', `"${tlsDir}/tls.crt"`],
    ['"/etc/nats/tls/tls.key"', `"${tlsDir}/tls.key"`],
    ['"/data/jetstream"', `"${dir}/js"`],
    ['listen: "0.0.0.0:4222"', 'listen: "127.0.0.1:-1"'],
    ['http: "0.0.0.0:8222"', 'http: "127.0.0.1:-1"'],
    ['listen: "0.0.0.0:8443"', 'listen: "127.0.0.1:-1"'],
    ...moves,
  ];
  for (const [from, to] of all) {
    assert.equal(conf.split(from).length, 2, `${file} has ${from} once`);
    conf = conf.replace(from, to);
  }
  conf += `\nports_file_dir: "${dir}"\n`;
  await Deno.writeTextFile(`${dir}/nats.conf`, conf);
  await Deno.writeTextFile(`${dir}/accounts.conf`, read("deploy/nats/accounts.conf"));
  const log = await Deno.open(`${dir}/server.log`, { create: true, write: true });
  const proc = new Deno.Command(NATS_SERVER, {
    args: ["-c", `${dir}/nats.conf`],
    env: { BACKFILL_PASS: PASSWORDS.backfill, EVENTS_PASS: PASSWORDS.events, ...env },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  proc.stderr.pipeTo(log.writable).catch(() => {});
  const stop = async () => {
    try {
      proc.kill("SIGKILL");
    } catch { /* exited */ }
    await withTimeout(proc.status, 15_000, `nats-server (${file}) to exit after SIGKILL`);
  };
  try {
    const ports = await waitFor(`nats-server's ports file (started with ${file})`, async () => {
      const f = [...Deno.readDirSync(dir)].find((e) => e.name.endsWith(".ports"));
      if (!f) return undefined;
      const p = JSON.parse(await Deno.readTextFile(`${dir}/${f.name}`));
      return p.websocket?.length ? p : undefined;
    }, 15_000);
    await waitFor("nats-server healthy with JetStream", async () => {
      const r = await fetch(`${ports.monitoring[0]}/healthz${full ? "" : "?js-enabled-only=true"}`);
      await r.body?.cancel();
      return r.ok || undefined;
    }, 20_000);
    const url = new URL(ports.websocket[0]);
    assert.equal(url.protocol, "wss:", "the WebSocket listener speaks TLS");
    return { wsUrl: `wss://localhost:${url.port}`, ca: `${tlsDir}/ca.crt`, dir, stop };
  } catch (e) {
    await stop();
    throw new Error(`${e}\nserver log:\n${await Deno.readTextFile(`${dir}/server.log`).catch(() => "")}`);
  }
}

/** How each runtime is told about the CA (NatsStore uses the runtime's WebSocket and trust store). */
function caEnv(runtime: string, ca: string): Record<string, string> {
  return runtime === "deno" ? { DENO_CERT: ca } : { NODE_EXTRA_CA_CERTS: ca };
}

/** Starts nats-server with deploy/nats/nats-server.conf, moved to `dir` and free loopback ports. */
async function startNats(dir: string): Promise<Nats> {
  await makeCertificates(dir);
  return await startFromKit(dir, `${dir}/tls`, "deploy/nats/nats-server.conf", []);
}

Deno.test({
  name: "deploy: nats-server with the kit's config: Deno, Bun and Node reach their job's bucket over wss with the CA, never another job's",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "splitlease-deploy-nats-" });
    const nats = await startNats(dir);
    try {
      const probe = `${root}tests/deploy/fixtures/nats_probe.ts`;
      const base = { URL: nats.wsUrl, NATS_USER: "backfill", NATS_PASS: PASSWORDS.backfill, OWN_JOB: "backfill", OTHER_JOB: "events", NO_COLOR: "1" };
      const commands: [string, string, string[]][] = [
        ["deno", bin("deno"), ["run", "-A", probe]],
        ["bun", bin("bun"), [probe]],
        ["node", bin("node"), [probe]],
      ];
      for (const [rt, cmd, args] of commands) {
        const r = await runCmd(cmd, args, { env: { ...base, ...caEnv(rt, nats.ca) }, timeoutMs: 60_000, what: `the ${rt} NATS probe` });
        const res = JSON.parse(r.stdout.trim().split("\n").at(-1)!);
        const why = `${rt}: ${r.out}`;
        assert.deepEqual(
          res.ownJob,
          { ok: true, created: true, updated: true, got: "2", listed: true, watched: "2", deleted: true },
          `${rt}: create, update, get, list, watch and delete on its own bucket\n${why}`,
        );
        if (rt === "deno") assert.deepEqual(res.ownJobNoDelay, res.ownJob, `deno with denoWebSocket: the same over wss\n${why}`);
        // Another job's bucket: refused at its replies (the default inbox names the job) …
        assert.equal(res.otherJob.code, "STORE_AUTH_FAILED", why);
        assert.match(res.otherJob.message, /Permissions Violation for Subscription to "_INBOX\.splitlease_events\./, why);
        // … and at its stream even through this job's inbox …
        assert.equal(res.otherBucketOwnInbox.code, "STORE_AUTH_FAILED", why);
        assert.match(res.otherBucketOwnInbox.message, /Permissions Violation for Publish to "\$JS\.API\.STREAM\.INFO\.KV_splitlease_events"/, why);
        // … and nobody reads another job's replies.
        assert.equal(res.snoop.refused, true, `${rt}: subscribing to _INBOX.splitlease_events.> is refused\n${why}`);
      }
      // Without the CA the runtime refuses the server's certificate.
      const r = await runCmd(bin("deno"), ["run", "-A", probe], { env: { ...base, ONLY_OWN: "1" }, timeoutMs: 60_000, what: "the probe without a CA" });
      const res = JSON.parse(r.stdout.trim().split("\n").at(-1)!);
      assert.equal(res.ownJob.ok, false, r.out);
      assert.match(res.ownJob.message, /certificate/i, r.out);
      assert.equal(res.ownJobNoDelay.ok, false, r.out);
      assert.match(res.ownJobNoDelay.message, /certificate/i, r.out);
    } finally {
      await nats.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "deploy: the kit's 3-node cluster config: a job's user creates its R3 bucket over wss and writes by compare-and-swap",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "splitlease-deploy-cluster-" });
    await makeCertificates(dir);
    const routes = [freePort(), freePort(), freePort()];
    const nodes: Nats[] = [];
    try {
      const started = await Promise.allSettled(routes.map(async (port, i) => {
        const nodeDir = `${dir}/n${i}`;
        await Deno.mkdir(nodeDir);
        const moves: [string, string][] = [
          ['listen: "0.0.0.0:6222"', `listen: "127.0.0.1:${port}"`],
          ...routes.map((p, j) => [`"nats-route://nats-${j}.nats:6222"`, `"nats-route://127.0.0.1:${p}"`] as [string, string]),
        ];
        return await startFromKit(nodeDir, `${dir}/tls`, "deploy/nats/nats-cluster.conf", moves, { SERVER_NAME: `nats-${i}` }, true);
      }));
      for (const r of started) if (r.status === "fulfilled") nodes.push(r.value);
      const failed = started.find((r) => r.status === "rejected") as PromiseRejectedResult | undefined;
      if (failed) throw failed.reason;
      const probe = `${root}tests/deploy/fixtures/nats_probe.ts`;
      const env = {
        URL: nodes.map((n) => n.wsUrl).join(","),
        NATS_USER: "backfill",
        NATS_PASS: PASSWORDS.backfill,
        OWN_JOB: "backfill",
        OTHER_JOB: "events",
        ONLY_OWN: "1",
        REPLICAS: "3",
        NO_COLOR: "1",
        ...caEnv("deno", `${dir}/tls/ca.crt`),
      };
      const r = await runCmd(bin("deno"), ["run", "-A", probe], { env, timeoutMs: 60_000, what: "the NATS probe on the cluster" });
      const res = JSON.parse(r.stdout.trim().split("\n").at(-1)!);
      assert.deepEqual(
        res.ownJob,
        { ok: true, created: true, updated: true, got: "2", listed: true, watched: "2", deleted: true },
        `create, update, get, list, watch and delete on its R3 bucket\n${r.out}`,
      );
      // The bucket really is replicated on all three, with direct gets off.
      const jsz = await (await fetch(`${JSON.parse(await portsOf(nodes[0].dir)).monitoring[0]}/jsz?accounts=true&streams=true&config=true`)).json();
      const stream = (jsz.account_details ?? []).flatMap((a: { stream_detail?: unknown[] }) => a.stream_detail ?? [])
        .find((d: { name: string }) => d.name === "KV_splitlease_backfill") as { config: { num_replicas: number; allow_direct: boolean } } | undefined;
      assert.equal(stream?.config.num_replicas, 3, JSON.stringify(jsz).slice(0, 500));
      assert.equal(stream?.config.allow_direct, false);
    } finally {
      await Promise.all(nodes.map((n) => n.stop()));
      await Deno.remove(dir, { recursive: true });
    }
  },
});

/** The ports file of a kit server started in `dir`. */
async function portsOf(dir: string): Promise<string> {
  const f = [...Deno.readDirSync(dir)].find((e) => e.name.endsWith(".ports"))!;
  return await Deno.readTextFile(`${dir}/${f.name}`);
}

interface Pod {
  name: string;
  proc: Deno.ChildProcess;
  port: number;
  lines: Record<string, unknown>[];
  raw: string[];
  status: Promise<Deno.CommandStatus>;
}

/**
 * Lays out what `dockerfile` puts in its image under `dir/app` (its COPY
 * lines; the repository's node_modules stands in for the deps stage) and
 * runs its RUN steps that prepare the runtime (deno cache).
 */
async function buildImage(dockerfile: string, dir: string): Promise<{ app: string; env: Record<string, string>; argv: string[] }> {
  const final = stages(dockerfile).at(-1)!;
  const app = `${dir}/app`;
  await Deno.mkdir(app, { recursive: true });
  const env: Record<string, string> = {};
  let argv: string[] = [];
  for (const l of final.lines) {
    if (l.startsWith("WORKDIR ")) assert.equal(l, "WORKDIR /app", `${dockerfile}: the app lives in /app`);
    else if (l.startsWith("COPY --from=deps")) {
      assert.equal(l, "COPY --from=deps /app/node_modules ./node_modules");
      await Deno.symlink(`${root}node_modules`, `${app}/node_modules`);
    } else if (l.startsWith("COPY ")) {
      const parts = l.split(/\s+/).slice(1);
      const dest = parts.pop()!;
      for (const src of parts) {
        const to = (dest.endsWith("/") ? `${app}/${dest}${src.split("/").pop()}` : `${app}/${dest}`).replace("/./", "/");
        await Deno.mkdir(to.slice(0, to.lastIndexOf("/")), { recursive: true });
        await runCmd("cp", ["-r", `${root}${src}`, to], { what: `COPY ${src}` });
      }
    } else if (l.startsWith("ENV ")) {
      for (const m of l.slice(4).matchAll(/([A-Z_]+)=(\S+)/g)) env[m[1]] = m[2];
    } else if (l.startsWith("ENTRYPOINT ")) argv = JSON.parse(l.slice("ENTRYPOINT ".length));
  }
  if (env.DENO_DIR) env.DENO_DIR = env.DENO_DIR.replace(/^\/app/, app);
  if (final.lines.some((l) => /^RUN deno cache /.test(l))) {
    await runCmd(bin("deno"), ["cache", ENTRY], { cwd: app, env: { DENO_DIR: env.DENO_DIR, NO_COLOR: "1" }, what: "deno cache (the image's RUN)" });
  }
  return { app, env, argv };
}

/** Starts a "pod": the image's command with the manifest's env, moved to this machine. */
function startPod(
  image: { app: string; env: Record<string, string>; argv: string[] },
  manifestEnv: Record<string, string>,
  name: string,
  local: { nats: Nats; data: string; out: string },
): Pod {
  const port = freePort();
  const env: Record<string, string> = { ...image.env, ...manifestEnv };
  // What cannot be the cluster's here: S3 becomes a directory, the NATS
  // service a loopback port, mounted files temp files, /out a temp dir.
  for (const k of ["OBJSTORE_BUCKET", "OBJSTORE_PREFIX", "AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]) delete env[k];
  env.OBJSTORE_DIR = local.data;
  assert.match(env.NATS_URL, /^wss:\/\/nats\./);
  env.NATS_URL = local.nats.wsUrl;
  for (const k of ["DENO_CERT", "NODE_EXTRA_CA_CERTS"]) env[k] = local.nats.ca;
  env.OUTPUT = env.OUTPUT.replace(/^\/out\//, `${local.out}/${name}-`);
  env.PORT = String(port);
  env.NO_COLOR = "1";
  const [runtime, ...args] = image.argv;
  const proc = new Deno.Command(bin(runtime), {
    args: args.map((a) => a.replace(/^--allow-write=\/out$/, `--allow-write=${local.out}`)),
    cwd: image.app,
    env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const pod: Pod = { name, proc, port, lines: [], raw: [], status: proc.status };
  const onLine = (l: string) => {
    pod.raw.push(l);
    const j = parseLogLine(l);
    if (j) pod.lines.push(j);
  };
  pod.status = Promise.all([proc.status, eachLine(proc.stdout, onLine), eachLine(proc.stderr, onLine)]).then(([s]) => s);
  return pod;
}

async function get(pod: Pod, path: string): Promise<{ status: number; body: Yaml }> {
  const r = await fetch(`http://127.0.0.1:${pod.port}${path}`, { signal: AbortSignal.timeout(2000) });
  return { status: r.status, body: await r.json().catch(() => null) };
}

async function post(pod: Pod, path: string, authorization?: string): Promise<{ status: number; body: Yaml }> {
  const r = await fetch(`http://127.0.0.1:${pod.port}${path}`, {
    method: "POST",
    headers: authorization ? { authorization } : {},
    signal: AbortSignal.timeout(2000),
  });
  return { status: r.status, body: await r.json().catch(() => null) };
}

Deno.test({
  name: "deploy: the images' commands with the manifests' env: Job pods (Deno, Bun) finish the job and exit 0; a Deployment pod on the finished job idles, ready, until SIGTERM",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "splitlease-deploy-pods-" });
    const pods: Pod[] = [];
    let nats: Nats;
    try {
      await Deno.mkdir(`${dir}/nats`);
      nats = await startNats(`${dir}/nats`);
    } catch (e) {
      await Deno.remove(dir, { recursive: true });
      throw e;
    }
    try {
      const data = `${dir}/data`;
      const out = `${dir}/out`;
      await Deno.mkdir(data);
      await Deno.mkdir(out);
      const ids: string[] = [];
      for (let f = 0; f < 6; f++) {
        const lines = Array.from({ length: 150 }, (_, i) => JSON.stringify({ id: `f${f}-${i}`, pad: "x".repeat(40) }));
        ids.push(...lines.map((l) => JSON.parse(l).id));
        await Deno.writeTextFile(`${data}/part-${f}.ndjson`, lines.join("\n") + "\n");
      }
      const local = { nats, data, out };
      // The Job's pods run without the optional operator token; the Deployment's pod gets it.
      const secrets = { "splitlease-nats/backfill-password": PASSWORDS.backfill };
      const drainToken = "drain-token-3f9a.b_c~d+e/f=";
      const images = {
        deno: await buildImage("deploy/docker/deno.Dockerfile", `${dir}/deno`),
        bun: await buildImage("deploy/docker/bun.Dockerfile", `${dir}/bun`),
      };
      const jobPod = worker(manifest("deploy/k8s/job.yaml", "Job").spec.template.spec);
      const job = manifest("deploy/k8s/job.yaml", "Job");
      const deployment = manifest("deploy/k8s/deployment.yaml", "Deployment");
      const deploymentPod = worker(deployment.spec.template.spec);
      const graceMs = deployment.spec.template.spec.terminationGracePeriodSeconds * 1000;

      // 1. The Job: index 0 on the Deno image, index 1 on the Bun image (one split per file).
      const jobEnv = (index: string) => resolveEnv(jobPod, { name: `backfill-${index}-abcde`, index, secrets });
      assert.equal(job.spec.completions, 3);
      const [j0, j1] = [startPod(images.deno, jobEnv("0"), "backfill-0", local), startPod(images.bun, jobEnv("1"), "backfill-1", local)];
      pods.push(j0, j1);
      for (const p of [j0, j1]) {
        const s = await withTimeout(p.status, 60_000, `Job pod ${p.name} to exit when the job is complete`);
        assert.equal(s.code, 0, `${p.name} exit code\n${p.raw.slice(-20).join("\n")}`);
        const fin = p.lines.find((l) => l.event === "finished");
        assert.equal(fin?.reason, "complete", `${p.name} finished with the job complete`);
        assert.ok(p.lines.some((l) => l.event === "serving" && l.instance === p.name), `${p.name} serves under its instance id`);
      }
      const delivered = new Set<string>();
      for (const e of Deno.readDirSync(out)) {
        for (const l of (await Deno.readTextFile(`${out}/${e.name}`)).split("\n")) if (l) delivered.add(JSON.parse(l).id);
      }
      assert.equal(delivered.size, ids.length, "every record reached the output");

      // 2. A Job pod that runs again on the finished job (a retried index) exits 0 at once.
      const again = startPod(images.deno, jobEnv("2"), "backfill-2", local);
      pods.push(again);
      const t0 = Date.now();
      assert.equal((await withTimeout(again.status, 30_000, "a Job pod on a finished job to exit")).code, 0);
      const restartMs = Date.now() - t0;
      console.log(`a Job pod on the finished job exited 0 after ${restartMs} ms (what a Deployment would restart in a loop)`);

      // 3. A Deployment pod on the finished job: stays up, live and ready (idle), until SIGTERM.
      const deploymentSecrets = { ...secrets, "splitlease-backfill/drain-token": `${drainToken}\n` }; // a Secret made from a file
      const d = startPod(images.deno, { ...resolveEnv(deploymentPod, { name: "backfill-7c9f8-x2kqz", secrets: deploymentSecrets }) }, "backfill-7c9f8-x2kqz", local);
      pods.push(d);
      await waitFor("the Deployment pod to idle after completion", () => {
        return Promise.resolve(d.lines.some((l) => l.event === "idle") || undefined);
      }, 30_000).catch((e) => {
        throw new Error(`${e.message}; its output:\n${d.raw.slice(-15).join("\n")}`);
      });
      await new Promise((r) => setTimeout(r, Math.max(1000, restartMs)));
      let exited = false;
      d.status.then(() => (exited = true));
      assert.equal(exited, false, `the idle pod is still running (a Job pod on the finished job exited after ${restartMs} ms)`);
      const ready = await get(d, deploymentPod.readinessProbe.httpGet.path);
      assert.equal(ready.status, 200);
      assert.equal(ready.body.idle, true);
      assert.equal((await get(d, deploymentPod.livenessProbe.httpGet.path)).status, 200);
      // The finished job stays visible on the idle pod: /fleet reads its records (the store stays open), read-only.
      const fleet = await get(d, "/fleet");
      assert.equal(fleet.status, 200, JSON.stringify(fleet.body));
      assert.deepEqual([fleet.body.plan.outcome, fleet.body.operator.access, fleet.body.members.length], ["allComplete", "none", 0]);
      // DRAIN_TOKEN reached serve: the operator routes ask for the token (401) instead of being closed (403).
      for (const auth of [undefined, "Bearer wrong-token"]) {
        const r = await post(d, "/drain", auth);
        assert.equal(r.status, 401, `POST /drain with ${auth ?? "no Authorization"}: ${JSON.stringify(r.body)}`);
      }
      assert.equal((await post(d, `/members/${d.name}/drain`)).status, 401, "an operator action without the token");
      const t1 = Date.now();
      d.proc.kill("SIGTERM");
      const s = await withTimeout(d.status, graceMs, `the idle pod to exit within terminationGracePeriodSeconds after SIGTERM`);
      assert.equal(s.code, 0, d.raw.slice(-10).join("\n"));
      assert.ok(Date.now() - t1 < graceMs);
    } finally {
      for (const p of pods) {
        try {
          p.proc.kill("SIGKILL");
        } catch { /* exited */ }
        await withTimeout(p.status.catch(() => {}), 15_000, `pod ${p.name} to exit after SIGKILL (its output pipes closed)`);
      }
      await nats.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
