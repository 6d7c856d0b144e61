/**
 * Counters and histograms by label values, kept per thread as plain data (so the threads' values
 * can be sent to one place and added up), and written in the Prometheus text exposition format.
 * Written by hand: the format is a few lines of text, no client library is needed.
 */

/** A metric family's definition. */
export interface Family {
  name: string;
  help: string;
  type: "counter" | "gauge" | "histogram";
  labels: readonly string[];
  /** Histogram bucket upper bounds, ascending (`+Inf` is implied). */
  buckets?: readonly number[];
}

/** One label set's value: a number, or a histogram's bucket counts, sum and count. */
export type Sample = number | { buckets: number[]; sum: number; count: number };

/** A family's samples by label values (joined with `\u0000`): plain data, cloneable. */
export type Samples = Record<string, Sample>;

/** Label values of one series are at most this long (client-chosen values are cut). */
const MAX_LABEL = 128;
/** Series per family at most; past it, new label sets are counted under `other`. */
export const MAX_SERIES = 10_000;
const SEPARATOR = "\u0000";
const OTHER = "other";

/** The values of one thread: every family's samples by name. */
export class Registry {
  readonly samples: Record<string, Samples> = {};
  /** Label sets per family so far. */
  readonly #series = new Map<string, number>();

  constructor(readonly families: readonly Family[]) {
    for (const family of families) this.samples[family.name] = {};
  }

  #key(family: Family, values: readonly string[]): string {
    const samples = this.samples[family.name];
    const key = values.map(label).join(SEPARATOR);
    if (key in samples) return key;
    const series = this.#series.get(family.name) ?? 0;
    if (series >= MAX_SERIES) return family.labels.map(() => OTHER).join(SEPARATOR);
    this.#series.set(family.name, series + 1);
    return key;
  }

  /** Adds `by` (default 1) to a counter, or sets a gauge with `set`. */
  add(family: Family, values: readonly string[], by = 1): void {
    const samples = this.samples[family.name];
    const key = this.#key(family, values);
    samples[key] = ((samples[key] as number | undefined) ?? 0) + by;
  }

  /** Drops a family's label sets that `keep` refuses (their series no longer count to the cap). */
  retain(family: Family, keep: (values: string[]) => boolean): void {
    const samples = this.samples[family.name];
    for (const key in samples) if (!keep(labelsOf(key))) delete samples[key];
    this.#series.set(family.name, Object.keys(samples).length);
  }

  /** Records one observation in a histogram. */
  observe(family: Family, values: readonly string[], value: number): void {
    const samples = this.samples[family.name];
    const key = this.#key(family, values);
    const bounds = family.buckets!;
    let sample = samples[key] as Exclude<Sample, number> | undefined;
    if (!sample) {
      sample = { buckets: new Array(bounds.length).fill(0), sum: 0, count: 0 };
      samples[key] = sample;
    }
    for (let i = 0; i < bounds.length; i++) if (value <= bounds[i]) sample.buckets[i]++;
    sample.sum += value;
    sample.count++;
  }
}

/** The label values a sample's key stands for. */
export function labelsOf(key: string): string[] {
  return key.split(SEPARATOR);
}

/** Adds up the samples of several threads (family by family, label set by label set). */
export function merge(parts: readonly Record<string, Samples>[]): Record<string, Samples> {
  const out: Record<string, Samples> = {};
  for (const part of parts) {
    for (const [name, samples] of Object.entries(part)) {
      const into = out[name] ??= {};
      for (const [key, sample] of Object.entries(samples)) {
        const have = into[key];
        if (typeof sample === "number") {
          into[key] = ((have as number | undefined) ?? 0) + sample;
        } else if (have === undefined) {
          into[key] = { buckets: [...sample.buckets], sum: sample.sum, count: sample.count };
        } else {
          const h = have as Exclude<Sample, number>;
          sample.buckets.forEach((n, i) => h.buckets[i] += n);
          h.sum += sample.sum;
          h.count += sample.count;
        }
      }
    }
  }
  return out;
}

/**
 * A label value of at most `MAX_LABEL` characters, copied: a slice of a long string can keep the
 * whole string alive (a client's 1 MB model id, say) for as long as the series exists.
 */
function label(value: string): string {
  return value.length > MAX_LABEL ? Array.from(value.slice(0, MAX_LABEL)).join("") : value;
}

function escape(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

function labelText(names: readonly string[], values: readonly string[], extra = ""): string {
  const pairs = names.map((name, i) => `${name}="${escape(values[i] ?? "")}"`);
  if (extra) pairs.push(extra);
  return pairs.length ? `{${pairs.join(",")}}` : "";
}

function number(n: number): string {
  return Number.isFinite(n) ? String(n) : n > 0 ? "+Inf" : n < 0 ? "-Inf" : "NaN";
}

/** Writes the families' samples in the text exposition format (version 0.0.4). */
export function render(families: readonly Family[], samples: Record<string, Samples>): string {
  const lines: string[] = [];
  for (const family of families) {
    lines.push(`# HELP ${family.name} ${family.help}`, `# TYPE ${family.name} ${family.type}`);
    const entries = Object.entries(samples[family.name] ?? {}).sort(([a], [b]) => a < b ? -1 : 1);
    for (const [key, sample] of entries) {
      const values = family.labels.length ? labelsOf(key) : [];
      if (typeof sample === "number") {
        lines.push(`${family.name}${labelText(family.labels, values)} ${number(sample)}`);
        continue;
      }
      family.buckets!.forEach((bound, i) => {
        const le = `le="${number(bound)}"`;
        lines.push(
          `${family.name}_bucket${labelText(family.labels, values, le)} ${sample.buckets[i]}`,
        );
      });
      lines.push(
        `${family.name}_bucket${labelText(family.labels, values, 'le="+Inf"')} ${sample.count}`,
        `${family.name}_sum${labelText(family.labels, values)} ${number(sample.sum)}`,
        `${family.name}_count${labelText(family.labels, values)} ${sample.count}`,
      );
    }
  }
  return lines.join("\n") + "\n";
}
