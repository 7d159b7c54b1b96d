/**
 * The deployment kit's hardening and its kustomize layout (issue 24, item
 * 5), statically: every workload runs without a service account token, on
 * a read-only root filesystem with its writable paths on volumes, non-root,
 * with a grace period that has headroom; a PodDisruptionBudget takes the
 * Deployment's workers one at a time; workers spread over nodes; a PodMonitor scrapes every splitlease
 * pod; the kustomize base lists the manifests and each overlay sets the
 * image, the job's name and the number of workers in one place, its
 * replacements naming fields the manifests have. Where kubectl is
 * installed (it embeds kustomize), each overlay is also built for real with
 * other values, and the output checked for them.
 */
import assert from "node:assert/strict";
import { parseAllDocuments } from "yaml";
import { parseCoordinatorConfig } from "../../admin.ts";
import { createApp } from "../../host.ts";
import { DEFAULT_SHUTDOWN_MARGIN_MS } from "../../src/serve/serve_options.ts";
import { runCmd } from "../helpers/cmd.ts";
import { ScriptedCoordinator } from "../helpers/scripted_coordinator.ts";

const root = new URL("../../", import.meta.url).pathname;
const read = (path: string) => Deno.readTextFileSync(`${root}${path}`);

// deno-lint-ignore no-explicit-any
type Yaml = any;

/** Every document of a YAML text, parsed as Kubernetes and kustomize do (YAML 1.1); fails on any error or warning. */
function parseYaml(text: string, where: string): Yaml[] {
  const docs = parseAllDocuments(text, { version: "1.1", prettyErrors: true });
  assert.ok(Array.isArray(docs), `${where} parses`);
  for (const d of docs) assert.deepEqual([...d.errors, ...d.warnings].map((e) => e.message), [], `${where}: YAML errors or warnings`);
  return docs.map((d) => d.toJS()).filter((d) => d !== null);
}
const yamlDocs = (path: string) => parseYaml(read(path), path);

const WORKLOADS = [
  { path: "deploy/k8s/deployment.yaml", kind: "Deployment" },
  { path: "deploy/k8s/job.yaml", kind: "Job" },
  { path: "deploy/k8s/observer.yaml", kind: "Deployment" },
] as const;
const BASE = "deploy/k8s";
const OVERLAYS = ["deploy/overlays/deployment", "deploy/overlays/job"] as const;
const COMPONENT = "deploy/k8s/components/podmonitor";

function one(path: string, kind: string): Yaml {
  const docs = yamlDocs(path).filter((d) => d.kind === kind);
  assert.equal(docs.length, 1, `${path} holds one ${kind}`);
  return docs[0];
}
const workerOf = (pod: Yaml) => pod.containers.find((c: Yaml) => c.name === "worker");
const selects = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.entries(selector).every(([k, v]) => labels?.[k] === v);

Deno.test("kit: every workload runs without a service account token, on a read-only root filesystem, non-root, with a grace period that has headroom", () => {
  const c = parseCoordinatorConfig({ job: "j", instance: "i", fingerprint: "f" });
  const HEADROOM_MS = 5000;
  for (const { path, kind } of WORKLOADS) {
    const pod = one(path, kind).spec.template.spec;
    const worker = workerOf(pod);
    assert.equal(pod.automountServiceAccountToken, false, `${path}: no service account token (the worker never calls the API)`);
    assert.equal(pod.securityContext.runAsNonRoot, true, `${path}: runAsNonRoot`);
    assert.equal(pod.securityContext.seccompProfile?.type, "RuntimeDefault", `${path}: seccomp`);
    assert.equal(worker.securityContext.readOnlyRootFilesystem, true, `${path}: readOnlyRootFilesystem`);
    assert.equal(worker.securityContext.allowPrivilegeEscalation, false, `${path}: no privilege escalation`);
    assert.deepEqual(worker.securityContext.capabilities?.drop, ["ALL"], `${path}: every capability dropped`);
    // What the worker writes is on a writable volume: its output and /tmp.
    const writable = (worker.volumeMounts as Yaml[]).filter((m) => !m.readOnly && pod.volumes.find((v: Yaml) => v.name === m.name)?.emptyDir);
    const paths = writable.map((m) => m.mountPath as string);
    assert.ok(paths.includes("/tmp"), `${path}: /tmp is a writable volume`);
    const output = (worker.env as Yaml[]).find((e) => e.name === "OUTPUT")?.value as string | undefined;
    if (output) assert.ok(paths.some((p) => output.startsWith(p + "/")), `${path}: OUTPUT ${output} is on a writable volume`);
    // The workers spread over nodes, by a selector of their own pods.
    if (!path.endsWith("observer.yaml")) {
      const spread = pod.topologySpreadConstraints?.find((t: Yaml) => t.topologyKey === "kubernetes.io/hostname");
      assert.ok(spread, `${path}: workers spread over nodes`);
      assert.equal(spread.whenUnsatisfiable, "ScheduleAnyway", `${path}: spreading never blocks scheduling`);
      assert.ok(selects(spread.labelSelector.matchLabels, one(path, kind).spec.template.metadata.labels), `${path}: the spread selects its pods`);
    }
    // Drain, serve's margin, the leave write, and headroom.
    const drain = Number((worker.env as Yaml[]).find((e) => e.name === "DRAIN_DEADLINE_MS")?.value ?? c.drainDeadlineMs);
    assert.ok(
      pod.terminationGracePeriodSeconds * 1000 >= drain + DEFAULT_SHUTDOWN_MARGIN_MS + c.opTimeoutMs + HEADROOM_MS,
      `${path}: terminationGracePeriodSeconds ${pod.terminationGracePeriodSeconds} leaves ${HEADROOM_MS} ms of headroom`,
    );
  }
});

Deno.test("kit: a PodDisruptionBudget takes the Deployment's workers one at a time, and a PodMonitor scrapes every splitlease pod on /metrics", async () => {
  const pdb = one("deploy/k8s/pdb.yaml", "PodDisruptionBudget");
  const deployment = one("deploy/k8s/deployment.yaml", "Deployment");
  const observer = one("deploy/k8s/observer.yaml", "Deployment");
  const job = one("deploy/k8s/job.yaml", "Job");
  assert.equal(pdb.apiVersion, "policy/v1");
  assert.equal(pdb.spec.maxUnavailable, 1);
  assert.ok(deployment.spec.replicas > pdb.spec.maxUnavailable, "a drain leaves workers running");
  assert.ok(selects(pdb.spec.selector.matchLabels, deployment.spec.template.metadata.labels), "the budget selects the workers");
  assert.ok(!selects(pdb.spec.selector.matchLabels, observer.spec.template.metadata.labels), "not the observer (one replica: it would block drains)");

  const monitor = one(`${COMPONENT}/podmonitor.yaml`, "PodMonitor");
  assert.equal(monitor.apiVersion, "monitoring.coreos.com/v1");
  const [endpoint] = monitor.spec.podMetricsEndpoints;
  assert.equal(endpoint.path, "/metrics");
  const app = createApp({ coordinator: new ScriptedCoordinator() });
  assert.equal((await app.request(endpoint.path)).status, 200, "the app serves the scraped path");
  for (const w of [deployment, observer, job]) {
    assert.ok(selects(monitor.spec.selector.matchLabels, w.spec.template.metadata.labels), `the PodMonitor selects the ${w.metadata.name} pods`);
    assert.ok(workerOf(w.spec.template.spec).ports.some((p: Yaml) => p.name === endpoint.port), `${w.metadata.name} has the port ${endpoint.port}`);
  }
  const component = yamlDocs(`${COMPONENT}/kustomization.yaml`)[0];
  assert.equal(component.kind, "Component");
  assert.deepEqual(component.resources, ["podmonitor.yaml"]);
});

/** The fields of a Kustomization this kit uses, as kustomize documents them. */
const KUSTOMIZATION_FIELDS = new Set(["apiVersion", "kind", "resources", "components", "images", "replicas", "patches", "configMapGenerator", "replacements"]);

/** The node at a kustomize field path (`a.b.[name=x].c`, `labels.[app.kubernetes.io/instance]`), or undefined. */
function at(node: Yaml, fieldPath: string): Yaml {
  const segments = fieldPath.match(/\[[^\]]*\]|[^.[\]]+/g) ?? [];
  for (const s of segments) {
    if (node === undefined || node === null) return undefined;
    const select = /^\[([^=\]]+)=([^\]]*)\]$/.exec(s);
    if (select) node = Array.isArray(node) ? node.find((e) => String(e?.[select[1]]) === select[2]) : undefined;
    else node = node[s.startsWith("[") ? s.slice(1, -1) : s];
  }
  return node;
}

/** The base's resources, and what an overlay's patches delete from them. */
function baseResources(): Yaml[] {
  const base = yamlDocs(`${BASE}/kustomization.yaml`)[0];
  return (base.resources as string[]).flatMap((r) => yamlDocs(`${BASE}/${r}`));
}

Deno.test("kit: the kustomize base lists the manifests, and each overlay sets the image, the job's name and the workers in one place", () => {
  const base = yamlDocs(`${BASE}/kustomization.yaml`)[0];
  assert.equal(base.apiVersion, "kustomize.config.k8s.io/v1beta1");
  assert.equal(base.kind, "Kustomization");
  const manifests = [...Deno.readDirSync(`${root}${BASE}`)].filter((e) => e.isFile && e.name.endsWith(".yaml") && e.name !== "kustomization.yaml")
    .map((e) => e.name).sort();
  assert.deepEqual([...base.resources].sort(), manifests.filter((n) => n !== "keda-scaledobject.yaml"), "every manifest but KEDA's (its CRDs may be missing)");
  const resources = baseResources();
  const find = (kind: string, name: string) => resources.find((r) => r.kind === kind && r.metadata.name === name);
  const images = new Set(resources.flatMap((r) => (r.spec?.template?.spec?.containers ?? []).map((c: Yaml) => c.image.replace(/:[^:/]+$/, ""))));
  for (const dir of OVERLAYS) {
    const where = `${dir}/kustomization.yaml`;
    const k = yamlDocs(where)[0];
    assert.equal(k.kind, "Kustomization", where);
    for (const f of Object.keys(k)) assert.ok(KUSTOMIZATION_FIELDS.has(f), `${where}: ${f} is a Kustomization field this kit knows`);
    assert.deepEqual(k.resources, ["../../k8s"], `${where}: the base`);
    for (const c of k.components ?? []) assert.equal(yamlDocs(`${dir}/${c}/kustomization.yaml`)[0].kind, "Component", `${where}: ${c} is a component`);
    // 1. The image: every container's.
    assert.equal(k.images.length, 1);
    assert.deepEqual([...images], [k.images[0].name], `${where}: the image it sets is every container's`);
    // The Deployment or the Job, not both.
    const deleted = (k.patches as Yaml[]).map((p) => parseYaml(p.patch, where)[0]).filter((p) => p.$patch === "delete");
    for (const d of deleted) assert.ok(find(d.kind, d.metadata.name), `${where}: deletes ${d.kind} ${d.metadata.name}, which the base has`);
    const kept = (kind: string, name: string) => find(kind, name) && !deleted.some((d) => d.kind === kind && d.metadata.name === name);
    assert.notEqual(kept("Deployment", "backfill"), kept("Job", "backfill"), `${where}: keeps the Deployment or the Job`);
    // 2. and 3. The job's name and the workers: literals of one generated ConfigMap, read by kustomize only.
    const [cm] = k.configMapGenerator;
    assert.equal(cm.options.annotations["config.kubernetes.io/local-config"], "true", `${where}: the values are not applied as a ConfigMap`);
    const values = Object.fromEntries((cm.literals as string[]).map((l) => l.split("=", 2)));
    assert.equal(values.JOB, "backfill");
    if (kept("Deployment", "backfill")) {
      assert.deepEqual(k.replicas, [{ name: "backfill", count: find("Deployment", "backfill").spec.replicas }], `${where}: replicas`);
    } else {
      assert.equal(Number(values.WORKERS), find("Job", "backfill").spec.completions, `${where}: WORKERS`);
    }
    // Each replacement reads a literal and writes fields the selected manifests have, holding what it replaces.
    const targeted = new Map<string, string[]>();
    for (const r of k.replacements as Yaml[]) {
      assert.equal(r.source.name, cm.name);
      const key = r.source.fieldPath.replace(/^data\./, "");
      assert.ok(key in values, `${where}: ${r.source.fieldPath} is a literal`);
      for (const t of r.targets as Yaml[]) {
        const m = find(t.select.kind, t.select.name);
        assert.ok(m, `${where}: ${t.select.kind} ${t.select.name} is in the base`);
        for (const fp of t.fieldPaths as string[]) {
          const v = at(m, fp);
          assert.notEqual(v, undefined, `${where}: ${t.select.kind} ${t.select.name} has ${fp}`);
          const part = t.options?.delimiter ? String(v).split(t.options.delimiter)[t.options.index] : String(v);
          assert.equal(part, values[key], `${where}: ${t.select.kind} ${t.select.name} ${fp} holds ${values[key]} (${v})`);
          targeted.set(`${t.select.kind}/${t.select.name}`, [...(targeted.get(`${t.select.kind}/${t.select.name}`) ?? []), fp]);
        }
      }
    }
    // Every kept workload gets the job's JOB; the Job its completions and parallelism.
    for (const [kind, name] of [["Deployment", "backfill"], ["Job", "backfill"], ["Deployment", "backfill-observer"]]) {
      if (!kept(kind, name)) continue;
      const fps = targeted.get(`${kind}/${name}`) ?? [];
      assert.ok(fps.includes("spec.template.spec.containers.[name=worker].env.[name=JOB].value"), `${where}: JOB of ${kind} ${name}`);
      assert.ok(fps.includes("metadata.name"), `${where}: the name of ${kind} ${name}`);
    }
  }
});

Deno.test({
  name: "kit: kubectl kustomize builds each overlay with another image, job name and worker count, and nothing of the defaults is left",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const which = await runCmd("sh", ["-c", "command -v kubectl"], { check: false });
    if (which.code !== 0) {
      console.log("kubectl is not installed: the overlays are checked statically only");
      return;
    }
    for (const dir of OVERLAYS) {
      // The overlay as a user edits it, in a directory of its own next to the repository's base.
      const tmp = await Deno.makeTempDir({ prefix: "splitlease-overlay-" });
      try {
        const base = `${root}${BASE}`;
        const rel = (to: string) => {
          const up = tmp.split("/").filter(Boolean).map(() => "..").join("/");
          return `${up}${to}`;
        };
        const text = read(`${dir}/kustomization.yaml`)
          .replaceAll("../../k8s", rel(base))
          .replace("newName: registry.example.com/splitlease-objstore", "newName: ghcr.io/example/orders-worker")
          .replace("newTag: deno", "newTag: v7")
          .replace("JOB=backfill", "JOB=orders-2024")
          .replace("count: 3", "count: 5")
          .replace("WORKERS=3", "WORKERS=5");
        await Deno.writeTextFile(`${tmp}/kustomization.yaml`, text);
        const built = await runCmd("kubectl", ["kustomize", tmp], { timeoutMs: 60_000, what: `kubectl kustomize ${dir}` });
        const out = parseYaml(built.stdout, `kubectl kustomize ${dir}`);
        const kinds = out.map((r) => `${r.kind}/${r.metadata.name}`).sort();
        const isJob = dir.endsWith("/job");
        assert.deepEqual(kinds, [
          ...(isJob ? [] : ["Deployment/orders-2024"]),
          "Deployment/orders-2024-observer",
          ...(isJob ? ["Job/orders-2024"] : []),
          ...(isJob ? [] : ["PodDisruptionBudget/orders-2024"]),
          "PodMonitor/splitlease",
          "Service/orders-2024-observer",
        ].sort(), `${dir}: the resources (no ConfigMap of values)`);
        assert.ok(!built.stdout.includes("backfill"), `${dir}: nothing named after the default job is left`);
        for (const w of out.filter((r) => r.spec?.template?.spec)) {
          const c = workerOf(w.spec.template.spec);
          const env = Object.fromEntries((c.env as Yaml[]).map((e) => [e.name, e]));
          assert.equal(c.image, "ghcr.io/example/orders-worker:v7", `${w.metadata.name}: image`);
          assert.equal(env.JOB.value, "orders-2024");
          assert.equal(env.NATS_USER.value, "orders-2024");
          assert.equal(env.NATS_PASS.valueFrom.secretKeyRef.key, "orders-2024-password");
          assert.equal(env.DRAIN_TOKEN.valueFrom.secretKeyRef.name, "splitlease-orders-2024");
          assert.ok(selects(w.spec.selector?.matchLabels ?? {}, w.spec.template.metadata.labels), `${w.metadata.name}: its selector matches its pods`);
        }
        const service = out.find((r) => r.kind === "Service");
        const observer = out.find((r) => r.metadata.name === "orders-2024-observer" && r.kind === "Deployment");
        assert.ok(selects(service.spec.selector, observer.spec.template.metadata.labels), "the Service selects the observer");
        if (isJob) {
          const job = out.find((r) => r.kind === "Job");
          assert.equal(job.spec.completions, 5);
          assert.equal(job.spec.parallelism, 5);
          assert.equal(workerOf(job.spec.template.spec).env.find((e: Yaml) => e.name === "INSTANCE").value, "orders-2024-$(JOB_INDEX)");
        } else {
          const deployment = out.find((r) => r.kind === "Deployment" && r.metadata.name === "orders-2024");
          assert.equal(deployment.spec.replicas, 5);
          const pdb = out.find((r) => r.kind === "PodDisruptionBudget");
          assert.ok(selects(pdb.spec.selector.matchLabels, deployment.spec.template.metadata.labels), "the budget selects the workers");
          assert.ok(!selects(pdb.spec.selector.matchLabels, observer.spec.template.metadata.labels), "not the observer");
        }
      } finally {
        await Deno.remove(tmp, { recursive: true });
      }
    }
  },
});

for (const [id, name] of [["postgres", "PostgreSQL"], ["redis", "Redis"]] as const) {
  Deno.test({
    name: `kit: the ${id} component makes every splitlease pod of either overlay coordinate through ${name} (STORE_URL from a Secret)`,
    sanitizeResources: false,
    sanitizeOps: false,
    fn: async () => {
      const component = yamlDocs(`deploy/k8s/components/${id}/kustomization.yaml`)[0];
      assert.equal(component.kind, "Component");
      const which = await runCmd("sh", ["-c", "command -v kubectl"], { check: false });
      if (which.code !== 0) {
        console.log(`kubectl is not installed: the ${id} component is checked statically only`);
        return;
      }
      for (const dir of OVERLAYS) {
        // The overlay with the component added, next to the real ones (components resolve relative to it).
        const tmp = `${root}deploy/overlays/_${id}_${crypto.randomUUID().slice(0, 8)}`;
        await Deno.mkdir(tmp);
        try {
          const text = read(`${dir}/kustomization.yaml`)
            .replace("  - ../../k8s/components/podmonitor", `  - ../../k8s/components/podmonitor\n  - ../../k8s/components/${id}`)
            .replace("JOB=backfill", "JOB=orders-2024");
          assert.ok(text.includes(`components/${id}`), `${dir} lists components`);
          await Deno.writeTextFile(`${tmp}/kustomization.yaml`, text);
          const built = await runCmd("kubectl", ["kustomize", tmp], { timeoutMs: 60_000, what: `kubectl kustomize ${dir} + ${id}` });
          const workloads = parseYaml(built.stdout, `kubectl kustomize ${dir} + ${id}`).filter((r) => r.spec?.template?.spec);
          assert.ok(workloads.length >= 2, `${dir}: the workers and the observer`);
          for (const w of workloads) {
            const env = Object.fromEntries((workerOf(w.spec.template.spec).env as Yaml[]).map((e) => [e.name, e]));
            assert.equal(env.STORE.value, id, `${w.metadata.name}: STORE`);
            assert.deepEqual(env.STORE_URL.valueFrom.secretKeyRef, { name: `splitlease-${id}`, key: "url" }, `${w.metadata.name}: STORE_URL`);
            assert.equal(env.NATS_PASS.valueFrom.secretKeyRef.optional, true, `${w.metadata.name}: starts without the NATS Secret`);
            assert.equal(env.JOB.value, "orders-2024", `${w.metadata.name}: the overlay's replacements still apply`);
          }
        } finally {
          await Deno.remove(tmp, { recursive: true });
        }
      }
    },
  });
}
