/**
 * An upstream that lies or breaks, for every family at once: faults asked for in the prompt that
 * rewrite an answer the emulator made correctly. `[[emulate usage=MODE]]` changes every count in
 * the answer's usage (`usage`, `usageMetadata`, wherever they are, in a JSON answer and in every
 * stream event): `negative`, `fraction` (+0.5), `huge` (10^15), `overflow` (2^64, past a signed
 * 64-bit integer), `text` (the count as a string) or `none` (no usage at all).
 * `[[emulate body=MODE]]` replaces a 200 answer's body: `html` (an HTML error page), `null` (the
 * JSON `null`; a stream of `data: null` events) or `mistyped` (every member of the wrong type).
 * They work where the emulator reads request bodies whole (`record`, as the tests run it).
 */

type Json = Record<string, unknown>;

/** How a usage's counts are changed. */
export type UsageFault = "negative" | "fraction" | "huge" | "overflow" | "text" | "none";
/** What replaces an answer's body. */
export type BodyFault = "html" | "null" | "mistyped";

/** The faults a request asks for. */
export interface AnswerFaults {
  usage?: UsageFault;
  body?: BodyFault;
}

const USAGE_FAULTS = new Set(["negative", "fraction", "huge", "overflow", "text", "none"]);
const BODY_FAULTS = new Set(["html", "null", "mistyped"]);
const DIRECTIVE = /\[\[emulate [^\]]*\b(usage|body)=([a-z]+)/g;

/** The answer faults named in a request's text, or null (the common case: nothing to do). */
export function answerFaults(text: string): AnswerFaults | null {
  if (!text.includes("[[emulate ")) return null;
  const found: AnswerFaults = {};
  for (const [, kind, mode] of text.matchAll(DIRECTIVE)) {
    if (kind === "usage" && USAGE_FAULTS.has(mode)) found.usage = mode as UsageFault;
    if (kind === "body" && BODY_FAULTS.has(mode)) found.body = mode as BodyFault;
  }
  return found.usage || found.body ? found : null;
}

/** A count changed as `mode` says. */
function faultyCount(value: number, mode: UsageFault): unknown {
  switch (mode) {
    case "negative":
      return -(value + 1000);
    case "fraction":
      return value + 0.5;
    case "huge":
      return 1e15;
    case "overflow":
      return 2 ** 64;
    case "text":
      return String(value);
    default:
      return value;
  }
}

/** Every number under `value` changed (objects and arrays walked). */
function faultyCounts(value: unknown, mode: UsageFault): unknown {
  if (typeof value === "number") return faultyCount(value, mode);
  if (Array.isArray(value)) return value.map((item) => faultyCounts(item, mode));
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, faultyCounts(item, mode)]),
    );
  }
  return value;
}

/** `value` with every usage member (`usage`, `usageMetadata`) changed, at any depth. */
function withFaultyUsage(value: unknown, mode: UsageFault): unknown {
  if (Array.isArray(value)) return value.map((item) => withFaultyUsage(item, mode));
  if (!value || typeof value !== "object") return value;
  const out: Json = {};
  for (const [key, item] of Object.entries(value)) {
    if ((key === "usage" || key === "usageMetadata") && item && typeof item === "object") {
      if (mode !== "none") out[key] = faultyCounts(item, mode);
    } else out[key] = withFaultyUsage(item, mode);
  }
  return out;
}

const MISTYPED = JSON.stringify({
  id: 7,
  object: ["response"],
  type: 5,
  model: {},
  output: "none",
  content: 9,
  message: "x",
  response: "y",
  delta: [],
  candidates: "z",
  choices: { first: 1 },
  usage: "lots",
  usageMetadata: [1],
});

const HTML = "<html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1>" +
  "</body></html>";

/** The data of one JSON text (an answer, or an event's data) with `faults` applied. */
function faultyData(data: string, faults: AnswerFaults): string {
  if (faults.body === "null") return "null";
  if (faults.body === "mistyped") return MISTYPED;
  if (!faults.usage) return data;
  try {
    return JSON.stringify(withFaultyUsage(JSON.parse(data), faults.usage));
  } catch {
    return data; // `[DONE]`, and anything else that is not JSON
  }
}

/** One chunk of SSE text (the emulator writes whole events) with every `data:` line changed. */
function faultyEvents(text: string, faults: AnswerFaults): string {
  return text.replace(/^data: ?(.*)$/gm, (_line, data: string) => {
    const eol = data.endsWith("\r") ? "\r" : "";
    return `data: ${faultyData(eol ? data.slice(0, -1) : data, faults)}${eol}`;
  });
}

/** `answer` as a faulty upstream would send it (only 2xx answers are changed). */
export async function faultyAnswer(answer: Response, faults: AnswerFaults): Promise<Response> {
  if (!answer.ok || !answer.body) return answer;
  if (faults.body === "html") {
    answer.body.cancel().catch(() => {});
    return new Response(HTML, { status: 200, headers: { "content-type": "text/html" } });
  }
  const headers = new Headers(answer.headers);
  headers.delete("content-length");
  const type = headers.get("content-type") ?? "";
  if (type.startsWith("text/event-stream")) {
    const decoder = new TextDecoder();
    const encoder = new TextEncoder();
    const body = answer.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          const text = decoder.decode(chunk, { stream: true });
          if (text) controller.enqueue(encoder.encode(faultyEvents(text, faults)));
        },
      }),
    );
    return new Response(body, { status: answer.status, headers });
  }
  if (!type.includes("json")) return answer;
  return new Response(faultyData(await answer.text(), faults), {
    status: answer.status,
    headers,
  });
}
