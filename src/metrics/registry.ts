/**
 * Counters and histograms by label values, kept per thread as plain data (so the threads' values
 * can be sent to one place and added up), and written in the Prometheus text exposition format.
 * Written by hand: the format is a few lines of text, no client library is needed.
 *
 * What a registry holds is bounded whatever clients send (see `bounds.ts`): a family has at most
 * `MAX_LINES` lines' worth of series, and a capped label (`LabelCap`: a model id served by an open
 * pattern) at most its `max` distinct values; past either, values are recorded as `other` and the
 * folds counted in `FOLDED`. The bounds are the process's when its threads `share` them.
 */
import { Bounds } from "./bounds.ts";

/** A metric family's definition. */
export interface Family {
  name: string;
  help: string;
  type: "counter" | "gauge" | "histogram";
  labels: readonly string[];
  /** Histogram bucket upper bounds, ascending (`+Inf` is implied). */
  buckets?: readonly number[];
}

/** A counter family: a value that only goes up, by `labels`. */
export function counter(name: string, help: string, labels: readonly string[] = []): Family {
  return { name, help, type: "counter", labels };
}

/** A gauge family: a value as it is now, by `labels`. */
export function gauge(name: string, help: string, labels: readonly string[] = []): Family {
  return { name, help, type: "gauge", labels };
}

/** A histogram family: observations counted in `buckets` (upper bounds, ascending), by `labels`. */
export function histogram(
  name: string,
  help: string,
  labels: readonly string[],
  buckets: readonly number[],
): Family {
  return { name, help, type: "histogram", labels, buckets };
}

/** One label set's value: a number, or a histogram's bucket counts, sum and count. */
export type Sample = number | { buckets: number[]; sum: number; count: number };

/** A family's samples by label values (joined with `\u0000`): plain data, cloneable. */
export type Samples = Record<string, Sample>;

/** Label values of one series are at most this long (client-chosen values are cut). */
const MAX_LABEL = 128;
/**
 * Exposition lines a family may write at most, whatever the number of threads: its series are
 * capped at this many over the lines one series writes (1; a histogram's: its buckets, `+Inf`,
 * `_sum` and `_count`). Past it, new label sets are counted under `other` (every label).
 */
export const MAX_LINES = 10_000;
const SEPARATOR = "\u0000";
/** The value that stands for the values a cap folded. */
export const OTHER = "other";
/** The `label` of `FOLDED` when a family's series cap folded a whole label set. */
export const ALL_LABELS = "*";

/** Observations whose label values were folded into `other`: by family and label. */
export const FOLDED: Family = counter(
  "switchyard_metric_labels_folded_total",
  "Observations recorded under `other` because a label had all the distinct values it may (label: its name) or a family all its series (label: *).",
  ["family", "label"],
);

/**
 * A label whose values clients choose (a model id served by an open pattern): across every
 * family that has it, at most `max` distinct values get series of their own, the first ones seen
 * in the process; the others are recorded as `other` and counted in `FOLDED`.
 */
export interface LabelCap {
  label: string;
  max: number;
  /** Values that are always kept and do not count against `max` (the catalog's own ids). */
  pinned?: (value: string) => boolean;
}

/** The exposition lines one series of `family` writes. */
export function linesPerSeries(family: Family): number {
  return family.type === "histogram" ? family.buckets!.length + 3 : 1;
}

/** What a registry knows of one family: its place in the bounds and its capped labels. */
interface FamilyState {
  index: number;
  /** Label positions in the family and the cap (index into the caps) each has. */
  capped: [position: number, cap: number][];
}

/** Series' keys by their label values, one level a label (see `Registry.#key`). */
interface KnownValues {
  next?: Map<string, KnownValues>;
  /** The key of the series of the values that lead here. */
  key?: string;
}

/** The values of one thread: every family's samples by name. */
export class Registry {
  readonly samples: Record<string, Samples> = {};
  readonly families: readonly Family[];
  #caps: readonly LabelCap[] = [];
  readonly #state = new Map<string, FamilyState>();
  #bounds!: Bounds;
  /** The keys of series made, by their label values in turn, per family (see `#key`). */
  readonly #known = new Map<Family, KnownValues>();

  /**
   * A registry of `families` (and `FOLDED`), its bounds its own until `share` gives it the
   * process's.
   */
  constructor(families: readonly Family[], caps: readonly LabelCap[] = []) {
    this.families = families.includes(FOLDED) ? families : [...families, FOLDED];
    for (const family of this.families) this.samples[family.name] = {};
    this.share(caps);
  }

  /**
   * Sets the label caps and the bounds' buffer: the one another thread's registry made (`bounds`
   * of it), so the bounds hold for the threads together, or a new one. Every thread must give the
   * same families and caps (`max`). The series recorded so far count against the new bounds.
   */
  share(caps: readonly LabelCap[], buffer?: SharedArrayBuffer): SharedArrayBuffer {
    const same = buffer !== undefined && buffer === this.#bounds?.buffer;
    this.#caps = caps;
    this.#state.clear();
    this.families.forEach((family, index) => {
      const capped: [number, number][] = [];
      family.labels.forEach((name, position) => {
        const cap = caps.findIndex((c) => c.label === name);
        if (cap >= 0) capped.push([position, cap]);
      });
      this.#state.set(family.name, { index, capped });
    });
    this.#bounds = new Bounds(
      this.families.map((family) => Math.floor(MAX_LINES / linesPerSeries(family))),
      caps.map((cap) => cap.max),
      buffer,
    );
    // Series recorded so far count against new bounds (bounds they were made in have them).
    for (const family of same ? [] : this.families) {
      const { index, capped } = this.#state.get(family.name)!;
      for (const key in this.samples[family.name]) {
        this.#bounds.takeSeries(index);
        const values = labelsOf(key);
        for (const [position, cap] of capped) this.#admit(cap, values[position]);
      }
    }
    return this.#bounds.buffer;
  }

  /** The bounds' shared buffer (to give the other threads' registries, see `share`). */
  get bounds(): SharedArrayBuffer {
    return this.#bounds.buffer;
  }

  #admit(cap: number, value: string): boolean {
    const { pinned } = this.#caps[cap];
    return (pinned?.(value) ?? false) || value === OTHER || this.#bounds.admit(cap, value);
  }

  /**
   * The key of `values` in `family`: the existing series, else a new one within the bounds. This
   * runs several times a request, nearly always for a series already made: its key is found by
   * the values themselves, without a key built (and looked up as a new string) each time.
   */
  #key(family: Family, values: readonly string[]): string {
    const samples = this.samples[family.name];
    let root = this.#known.get(family);
    if (!root) this.#known.set(family, root = {});
    let node: KnownValues | undefined = root;
    for (let i = 0; node && i < values.length; i++) node = node.next?.get(values[i]);
    // A series dropped since (`retain`) is made again, within the bounds.
    if (node?.key !== undefined && node.key in samples) return node.key;
    let key = values.length ? label(values[0]) : "";
    for (let i = 1; i < values.length; i++) key += SEPARATOR + label(values[i]);
    const found = key in samples ? key : this.#newKey(family, values, values.map(label), key);
    // Only a series of these very values (not one they were folded or cut into): one entry a
    // series, so these are bounded as the series are.
    if (found === key && values.every((value) => value.length <= MAX_LABEL)) {
      let at = root;
      for (const value of values) {
        at.next ??= new Map();
        let next = at.next.get(value);
        if (!next) at.next.set(value, next = {});
        at = next;
      }
      at.key = key;
    }
    return found;
  }

  /** The key of a label set with no series in this thread yet (`labels`: `values` cut). */
  #newKey(family: Family, values: readonly string[], labels: string[], key: string): string {
    const samples = this.samples[family.name];
    const state = this.#state.get(family.name)!;
    let folded = false;
    for (const [position, cap] of state.capped) {
      if (this.#admit(cap, values[position])) continue;
      labels[position] = OTHER;
      folded = true;
      this.#fold(family, family.labels[position]);
    }
    if (folded) {
      key = labels.join(SEPARATOR);
      if (key in samples) return key;
    }
    if (this.#bounds.takeSeries(state.index)) return key;
    this.#fold(family, ALL_LABELS);
    // The one series a full family still gets (in each thread; they add up to one).
    return family.labels.map(() => OTHER).join(SEPARATOR);
  }

  #fold(family: Family, label: string): void {
    if (family !== FOLDED) this.add(FOLDED, [family.name, label]);
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
    let dropped = 0;
    for (const key in samples) {
      if (keep(labelsOf(key))) continue;
      delete samples[key];
      dropped++;
    }
    this.#bounds.giveSeries(this.#state.get(family.name)!.index, dropped);
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
