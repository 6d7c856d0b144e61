/**
 * Tool-call ids across protocols (pure): synthesised stably where a protocol gives none (Gemini),
 * and made acceptable to Anthropic (`^[a-zA-Z0-9_-]+$`) by one deterministic function, so a call
 * and its result always get the same id.
 */

/** FNV-1a, 32 bits, as 8 hex digits: short, stable, no I/O. */
export function shortHash(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, "0");
}

/** A call id derived from where the call sits (`seed`), the same every time. */
export function synthesizeId(seed: string): string {
  return `call_${shortHash(seed)}${shortHash(`${seed}#`)}`;
}

const ANTHROPIC_ID = /^[a-zA-Z0-9_-]{1,128}$/;

/** `id` as Anthropic accepts it: unchanged when it already is, else sanitised with a hash. */
export function anthropicToolId(id: string): string {
  if (ANTHROPIC_ID.test(id)) return id;
  const clean = id.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 96);
  return `${clean || "toolu"}_${shortHash(id)}`;
}

/** A random id with a prefix, for objects the gateway creates (`resp_…`, `msg_…`). */
export function newId(prefix: string, bytes = 12): string {
  const random = crypto.getRandomValues(new Uint8Array(bytes));
  let id = prefix;
  for (const byte of random) id += HEX[byte];
  return id;
}

const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, "0"));

/**
 * Tool arguments as an object: a JSON string parsed (empty ⇒ `{}`), an object as it is; a string
 * that is not a JSON object is kept whole as `{_raw: "…"}`, never silently dropped.
 */
export function parseArguments(value: unknown): Record<string, unknown> {
  if (value && typeof value === "object" && !Array.isArray(value)) {
    return value as Record<string, unknown>;
  }
  if (value === undefined || value === null || value === "") return {};
  if (typeof value !== "string") return { _raw: JSON.stringify(value) };
  try {
    const parsed = JSON.parse(value);
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) return parsed;
  } catch { /* kept raw below */ }
  return { _raw: value };
}

/** Tool arguments as a JSON string (the `_raw` form gives back its string). */
export function stringifyArguments(input: unknown): string {
  const raw = (input as { _raw?: unknown } | null)?._raw;
  if (
    typeof raw === "string" && input && typeof input === "object" &&
    Object.keys(input).length === 1
  ) {
    return raw;
  }
  return JSON.stringify(input ?? {});
}
