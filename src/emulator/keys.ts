/**
 * The emulator's upstream keys, each with the fault it plays on every route of its family: a key
 * whose quota is exhausted (429 with `retry-after`), one the provider does not know (refused as an
 * unknown key is), one whose requests fail (500), one the provider is too busy for (Anthropic's
 * 529, 503 elsewhere). Written `KEY` or `KEY:fault` (`KEY:exhausted=5`: retry after 5 s; `=0`: no
 * `retry-after`), on the command line (`emulate --key …`, repeated) or in tests.
 */

/** What a key does. */
export type KeyFault = "exhausted" | "invalid" | "failing" | "overloaded";

const FAULTS: readonly KeyFault[] = ["exhausted", "invalid", "failing", "overloaded"];

/** One accepted upstream key. */
export interface KeySpec {
  key: string;
  fault?: KeyFault | null;
  /** Seconds in an exhausted key's `retry-after` (default 1; 0: no header). */
  retryAfter?: number;
}

/** Reads `KEY`, `KEY:fault` or `KEY:exhausted=N`; throws on anything else. */
export function parseKeySpec(text: string): KeySpec {
  const match = /^([^:\s]+)(?::(\w+)(?:=(\d{1,6}))?)?$/.exec(text);
  if (!match) throw new Error(`--key ${text}: expected KEY or KEY:FAULT (${FAULTS.join(", ")})`);
  const [, key, fault, seconds] = match;
  if (fault === undefined) return { key };
  if (!FAULTS.includes(fault as KeyFault)) {
    throw new Error(`--key ${text}: unknown fault "${fault}" (${FAULTS.join(", ")})`);
  }
  if (seconds !== undefined && fault !== "exhausted") {
    throw new Error(`--key ${text}: only "exhausted" takes a number (seconds of retry-after)`);
  }
  return {
    key,
    fault: fault as KeyFault,
    ...(seconds !== undefined ? { retryAfter: Number(seconds) } : {}),
  };
}

/** The keys an emulator accepts, their faults, and how many requests carried each. */
export class KeyBook {
  readonly #keys = new Map<string, KeySpec>();
  readonly #requests = new Map<string, number>();

  /** `open`: any key is accepted as a good one (an emulator started without keys). */
  constructor(specs: readonly KeySpec[], readonly open = false) {
    for (const spec of specs) this.#keys.set(spec.key, spec);
  }

  /**
   * The key's spec, counting the request; undefined for a key not in the book (in an open book,
   * a good key's spec, not counted).
   */
  take(key: string): KeySpec | undefined {
    const spec = this.#keys.get(key);
    if (!spec) return this.open ? { key } : undefined;
    this.#requests.set(key, (this.#requests.get(key) ?? 0) + 1);
    return spec;
  }

  /** Sets (or adds) one key's fault; returns the entry. */
  set(spec: KeySpec): KeySpec {
    this.#keys.set(spec.key, spec);
    return spec;
  }

  /** Every key with its requests and fault (for `GET /_emulator/keys`). */
  report(): Record<string, { requests: number; fault: KeyFault | null }> {
    const out: Record<string, { requests: number; fault: KeyFault | null }> = {};
    for (const [key, spec] of this.#keys) {
      out[key] = { requests: this.#requests.get(key) ?? 0, fault: spec.fault ?? null };
    }
    return out;
  }
}

/** Reads a `POST /_emulator/keys` body into a spec; throws on a malformed one. */
export function keySpecOf(body: unknown): KeySpec {
  const b = body as { key?: unknown; fault?: unknown; retryAfter?: unknown } | null;
  if (!b || typeof b.key !== "string" || !b.key) throw new Error("key must be a string");
  if (b.fault !== null && b.fault !== undefined && !FAULTS.includes(b.fault as KeyFault)) {
    throw new Error(`fault must be one of ${FAULTS.join(", ")} or null`);
  }
  if (
    b.retryAfter !== undefined && !(Number.isInteger(b.retryAfter) && Number(b.retryAfter) >= 0)
  ) {
    throw new Error("retryAfter must be a whole number of seconds");
  }
  return {
    key: b.key,
    fault: (b.fault ?? null) as KeyFault | null,
    ...(b.retryAfter !== undefined ? { retryAfter: Number(b.retryAfter) } : {}),
  };
}
