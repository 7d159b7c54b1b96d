/**
 * A small Prometheus registry and text exposition (format 0.0.4), Web
 * standards only. Popular clients (prom-client and its wrappers) depend on
 * Node built-ins, so the core keeps its own: gauges, counters and
 * histograms with labels, rendered with HELP/TYPE and escaped label values.
 *
 * @module
 */
import type { Histogram } from "../coordinator/coordinator_stats.ts";

/**
 * Content type of the Prometheus text exposition format 0.0.4.
 *
 * @example
 * ```ts
 * import { PROMETHEUS_CONTENT_TYPE } from "@splitlease/splitlease/host";
 * const headers = { "content-type": PROMETHEUS_CONTENT_TYPE };
 * ```
 */
export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/**
 * Label names and values of one sample.
 *
 * @example
 * ```ts
 * import type { Labels } from "@splitlease/splitlease/host";
 * const labels: Labels = { reason: "takeover" };
 * ```
 */
export type Labels = Record<string, string>;

/**
 * Kinds of metric families.
 *
 * @example
 * ```ts
 * import type { MetricType } from "@splitlease/splitlease/host";
 * const type: MetricType = "counter";
 * ```
 */
export type MetricType = "gauge" | "counter" | "histogram";

interface Family {
  name: string;
  help: string;
  type: MetricType;
  samples: { labels: Labels; value: number | Histogram }[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/**
 * Escapes a label value: backslash, double quote and line feed.
 *
 * @example
 * ```ts
 * escapeLabelValue('a"b\\c\n'); // a\"b\\c\n (escaped)
 * ```
 */
export function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/** Escapes HELP text: backslash and line feed. */
function escapeHelp(text: string): string {
  return text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}

/**
 * Formats a sample value (`+Inf`, `-Inf`, `NaN` spelled as Prometheus does).
 *
 * @example
 * ```ts
 * formatSampleValue(Infinity); // "+Inf"
 * ```
 */
export function formatSampleValue(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  return String(v);
}

function renderLabels(labels: Labels): string {
  const keys = Object.keys(labels);
  if (keys.length === 0) return "";
  return "{" + keys.map((k) => `${k}="${escapeLabelValue(labels[k])}"`).join(",") + "}";
}

/**
 * Collects metric families for one scrape and renders them in the
 * Prometheus text format. Families render in registration order.
 *
 * @example
 * ```ts
 * import { MetricsRegistry } from "@splitlease/splitlease/host";
 * const r = new MetricsRegistry("app_");
 * r.gauge("up", "Whether the app is up.").set(1);
 * r.counter("requests_total", "Requests.").set(5, { route: "/x" });
 * console.log(r.render());
 * ```
 */
export class MetricsRegistry {
  #prefix: string;
  #constLabels: Labels;
  #families = new Map<string, Family>();

  /**
   * Creates a registry whose metric names all start with `prefix`;
   * `constLabels` are put first on every sample (each family's own labels
   * may not repeat them).
   */
  constructor(prefix = "", constLabels: Labels = {}) {
    if (prefix !== "" && !/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(prefix)) {
      throw new TypeError(`invalid metric name prefix ${JSON.stringify(prefix)}`);
    }
    for (const k of Object.keys(constLabels)) {
      if (!LABEL.test(k) || k.startsWith("__") || k === "le") throw new TypeError(`invalid constant label name ${JSON.stringify(k)}`);
    }
    this.#prefix = prefix;
    this.#constLabels = { ...constLabels };
  }

  #family(name: string, help: string, type: MetricType): Family {
    const full = this.#prefix + name;
    if (!NAME.test(full)) throw new TypeError(`invalid metric name ${JSON.stringify(full)}`);
    let f = this.#families.get(full);
    if (!f) {
      f = { name: full, help, type, samples: [] };
      this.#families.set(full, f);
    } else if (f.type !== type) {
      throw new TypeError(`metric ${full} registered as ${f.type}, not ${type}`);
    }
    return f;
  }

  #setter(f: Family): { set(value: number, labels?: Labels): void } {
    return {
      set: (value: number, labels: Labels = {}) => {
        for (const k of Object.keys(labels)) {
          if (!LABEL.test(k) || k.startsWith("__") || (f.type === "histogram" && k === "le") || k in this.#constLabels) {
            throw new TypeError(`invalid label name ${JSON.stringify(k)} on ${f.name}`);
          }
        }
        f.samples.push({ labels: { ...this.#constLabels, ...labels }, value });
      },
    };
  }

  /**
   * A gauge family: `set(value, labels?)` adds one sample. A family with no
   * sample still renders its HELP and TYPE.
   */
  gauge(name: string, help: string): { set(value: number, labels?: Labels): void } {
    return this.#setter(this.#family(name, help, "gauge"));
  }

  /** A counter family (name should end in `_total`). */
  counter(name: string, help: string): { set(value: number, labels?: Labels): void } {
    return this.#setter(this.#family(name, help, "counter"));
  }

  /** A histogram family: `set(histogram, labels?)` adds one labelled histogram. */
  histogram(name: string, help: string): { set(value: Histogram, labels?: Labels): void } {
    const f = this.#family(name, help, "histogram");
    const s = this.#setter(f);
    return { set: (h: Histogram, labels?: Labels) => s.set(h as unknown as number, labels) };
  }

  /** Renders every family in the text exposition format (ends with a newline). */
  render(): string {
    const out: string[] = [];
    for (const f of this.#families.values()) {
      out.push(`# HELP ${f.name} ${escapeHelp(f.help)}`);
      out.push(`# TYPE ${f.name} ${f.type}`);
      for (const s of f.samples) {
        if (f.type !== "histogram") {
          out.push(`${f.name}${renderLabels(s.labels)} ${formatSampleValue(s.value as number)}`);
          continue;
        }
        const h = s.value as Histogram;
        let cumulative = 0;
        h.buckets.forEach((le, i) => {
          cumulative += h.counts[i] ?? 0;
          out.push(`${f.name}_bucket${renderLabels({ ...s.labels, le: formatSampleValue(le) })} ${cumulative}`);
        });
        out.push(`${f.name}_bucket${renderLabels({ ...s.labels, le: "+Inf" })} ${h.count}`);
        out.push(`${f.name}_sum${renderLabels(s.labels)} ${formatSampleValue(h.sum)}`);
        out.push(`${f.name}_count${renderLabels(s.labels)} ${h.count}`);
      }
    }
    return out.join("\n") + "\n";
  }
}
