/**
 * The chat chunk most of a stream is made of — one choice whose delta is a piece of text — read
 * from its data's text without parsing it (pure). A chat stream is a chunk per token, and parsing
 * each whole chunk (id, model, fingerprint and all) only to find its text was the most of what
 * a meter and a decoder spent on it; one anchored expression reads it in a fifth of the time.
 *
 * Conservative: a chunk is read here only when it is, byte for byte, compact JSON of exactly that
 * shape — members known to carry nothing else, each at most once, values of the types expected,
 * strings valid JSON — and anything else (whitespace, another member, a second choice, a finish
 * reason, usage, an error, a key written with escapes, a choice's members in another order, …) is
 * left to the full parse. What a chunk read here means is then what its parse would mean: its
 * text, and nothing else.
 */

/** A JSON string: no raw control characters, only valid escapes. */
const STRING = String.raw`"[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*"`;
const NUMBER = String.raw`-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?`;

/** A member of the chunk's identity, which readers take from the first chunk only. */
const IDENTITY = String.raw`"(?:id|object|model)":${STRING}|"created":${NUMBER}|` +
  String.raw`"(?:system_fingerprint|service_tier)":(?:${STRING}|null)`;

/**
 * The one choice, its members in the order every vendor writes them: index 0, a delta of `content`
 * (after the `role` of a first delta), no logprobs, no finish reason.
 */
const CHOICE = String.raw`\{"index":0,"delta":\{(?:"role":${STRING},)?"content":(${STRING})\}` +
  String.raw`(?:,"logprobs":null)?(?:,"finish_reason":null)?\}`;

/**
 * A chunk of text: identity members (group 1) in any order, the one choice (its content: group 2),
 * then perhaps `usage: null` (what asking for usage puts on every chunk) and OpenAI's padding.
 */
const PLAIN_CHUNK = new RegExp(
  String.raw`^\{((?:(?:${IDENTITY}),)*)"choices":\[${CHOICE}\]` +
    String.raw`(?:,"usage":null)?(?:,"obfuscation":${STRING})?\}$`,
);

/**
 * The longest chunk read here: text deltas are a few hundred characters, and the expression's
 * backtracking keeps a little for each member and escape it passes (millions of them would
 * overflow its stack); a longer chunk is parsed.
 */
const MAX_LENGTH = 8192;

/**
 * A member's name in the identity members (group 1 of `PLAIN_CHUNK`), whose names are only those
 * written in `IDENTITY`: a quote followed by a colon there always ends a name (a string's own
 * quotes are escaped, and a value is never followed by a colon).
 */
const NAME = /"([a-z_]+)":/g;

/** Whether identity members (group 1 of `PLAIN_CHUNK`) name no member twice. */
function distinct(identity: string): boolean {
  const names = new Set<string>();
  for (const [, name] of identity.matchAll(NAME)) {
    if (names.has(name)) return false;
    names.add(name);
  }
  return true;
}

/**
 * The text of a chunk that is only a piece of text — its one choice (index 0) with a delta of
 * `content` (and perhaps `role`), no finish reason, no logprobs, `usage` null or absent, and
 * otherwise only the chunk's identity (`id`, `object`, `created`, `model`, `system_fingerprint`,
 * `service_tier`; OpenAI's `obfuscation`) — read from its data's text: the content as
 * `JSON.parse` reads it. Undefined for any other chunk, for any text not written exactly so (see
 * the module's doc) and for a chunk longer than `MAX_LENGTH`: those are for the full parse.
 */
export function plainDelta(text: string): string | undefined {
  return plainDeltaReader()(text);
}

/**
 * The last text matched, and its match: a relayed chunk is read twice, by the stream's meter and
 * by its decoder when it is translated, with the same string (the event's data, decoded once).
 */
let lastText: string | undefined;
let lastMatch: RegExpExecArray | null = null;

/** `PLAIN_CHUNK` on `text`, once for a text asked twice in a row (a pure function of it). */
function matchPlain(text: string): RegExpExecArray | null {
  if (text.length > MAX_LENGTH) return null;
  if (text !== lastText) {
    lastText = text;
    lastMatch = PLAIN_CHUNK.exec(text);
  }
  return lastMatch;
}

/**
 * `plainDelta` for one stream's chunks: it keeps the identity members last found to name no
 * member twice, the same text on every chunk of a stream, so that check runs once a stream. (Kept
 * per stream, not per process: under load the chunks of many streams arrive interleaved.)
 */
export function plainDeltaReader(): (text: string) => string | undefined {
  let known = "";
  return (text) => {
    const match = matchPlain(text);
    if (!match) return undefined;
    const [, identity, quoted] = match;
    if (identity !== known) {
      if (!distinct(identity)) return undefined;
      known = identity;
    }
    return quoted.includes("\\") ? JSON.parse(quoted) : quoted.slice(1, -1);
  };
}
