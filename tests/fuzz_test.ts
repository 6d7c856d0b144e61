/**
 * A seeded fuzz test: structured mutations of valid request bodies on every route — huge and
 * negative numbers, wrong types, deep nesting, prototype keys, long strings, invalid UTF-8,
 * truncated JSON, bad model names in paths — sent to the real gateway in front of the emulator.
 * No answer may be a 5xx, every error must be in the route's own envelope, and the money must add
 * up afterwards. `FUZZ_SEED` and `FUZZ_CASES` override the defaults.
 */
import assert from "node:assert/strict";
import { eventually, startStack, usageOf } from "./helpers/setup.ts";
import { booksOf } from "./helpers/store.ts";
import { random } from "./helpers/random.ts";

const SEED = Number(Deno.env.get("FUZZ_SEED") ?? 20261122);
const CASES = Number(Deno.env.get("FUZZ_CASES") ?? 3000);

const stack = await startStack({
  server: { maxBodyBytes: 1024 * 1024 },
  videos: { pollIntervalMs: 100 },
  models: {
    // An open pattern: whatever id a client sends after `local-` resolves, and is copied into a
    // response header, metric labels, log lines and the upstream request.
    "local-*": { provider: "local", price: { input: 2.5, output: 15 }, maxOutputTokens: 8192 },
  },
});
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

type Json = unknown;
type Format = "openai" | "anthropic" | "google";

interface Target {
  path: string;
  format: Format;
  body: Json;
}

const text = (t: string) => [{ role: "user", parts: [{ text: t }] }];
const TARGETS: Target[] = [
  {
    path: "/v1/responses",
    format: "openai",
    body: {
      model: "gpt-test",
      input: [{ role: "user", content: [{ type: "input_text", text: "hi" }] }],
      max_output_tokens: 64,
      tools: [{ type: "function", name: "f", parameters: { type: "object", properties: {} } }],
      stream: false,
    },
  },
  {
    path: "/v1/chat/completions",
    format: "openai",
    body: {
      model: "gpt-test",
      messages: [{ role: "user", content: "hi" }],
      max_completion_tokens: 64,
      n: 1,
      stream: true,
      stream_options: { include_usage: false },
    },
  },
  {
    path: "/v1/messages",
    format: "anthropic",
    body: {
      model: "claude-test",
      max_tokens: 64,
      system: [{ type: "text", text: "be brief" }],
      messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
      thinking: { type: "enabled", budget_tokens: 32 },
      stream: true,
    },
  },
  {
    path: "/v1/messages/count_tokens",
    format: "anthropic",
    body: { model: "claude-test", messages: [{ role: "user", content: "hi" }] },
  },
  {
    path: "/v1beta/models/gemini-test:generateContent",
    format: "google",
    body: {
      contents: text("hi"),
      systemInstruction: { parts: [{ text: "be brief" }] },
      generationConfig: { maxOutputTokens: 64, temperature: 0.5 },
    },
  },
  {
    path: "/v1beta/models/gemini-3-pro-image-test:streamGenerateContent?alt=sse",
    format: "google",
    body: {
      contents: text("a fox"),
      generationConfig: {
        responseModalities: ["TEXT", "IMAGE"],
        imageConfig: { aspectRatio: "1:1", imageSize: "1K" },
      },
    },
  },
  {
    path: "/v1/models/gemini-test:streamGenerateContent",
    format: "google",
    body: { contents: text("hi"), tools: [{ googleSearch: {} }] },
  },
  {
    path: "/v1beta/models/gemini-test:countTokens",
    format: "google",
    body: { contents: text("hi") },
  },
  {
    path: "/v1/embeddings",
    format: "openai",
    body: { model: "embed-test", input: ["a", "b"], encoding_format: "float", dimensions: 8 },
  },
  {
    path: "/v1/images/generations",
    format: "openai",
    body: { model: "image-test", prompt: "a fox", n: 1, size: "1024x1024", quality: "low" },
  },
  {
    path: "/v1/images/edits",
    format: "openai",
    body: { model: "image-test", prompt: "edit", images: [{ image_url: "https://e.com/a.png" }] },
  },
  {
    path: "/v1/videos/generations",
    format: "openai",
    body: { model: "video-test", prompt: "waves", duration: 1, resolution: "480p" },
  },
  {
    path: "/v1/videos/edits",
    format: "openai",
    body: { model: "video-test", prompt: "waves", video: { url: "https://e.com/v.mp4" } },
  },
  { path: "/v1/responses/compact", format: "openai", body: { model: "gpt-test", input: "hi" } },
  {
    path: "/v1/responses/input_tokens",
    format: "openai",
    body: { model: "gpt-test", input: "hi" },
  },
  {
    path: "/v1/alpha/search",
    format: "openai",
    body: { id: "s1", model: "gpt-test", input: "news", commands: {}, settings: {} },
  },
];

/**
 * Text that is valid JSON but not valid where a gateway might copy it: non-ASCII and control
 * characters, line breaks that would split a header or a log line, a lone surrogate, a quote and
 * a backslash that would break a metric label.
 */
const ODD_TEXT = [
  "é",
  "模型",
  "\r\nx-injected: 1",
  "\n",
  "\u0001\u007f",
  "\u2028",
  "\ud83d",
  '"}\\',
  "a b",
];

const PROTOTYPE_KEYS = ["__proto__", "constructor", "toString", "hasOwnProperty", "valueOf"];

function nested(depth: number, leaf: Json): Json {
  let value = leaf;
  for (let i = 0; i < depth; i++) value = i % 2 ? [value] : { a: value };
  return value;
}

/** A value to put somewhere in a body. */
function hostile(rand: () => number): Json {
  const pick = <T>(items: T[]) => items[Math.floor(rand() * items.length)];
  switch (Math.floor(rand() * 9)) {
    case 0:
      return pick([1e308, -1e308, 2 ** 53, -1, 0, -0.5, 1.5, 4294967296, 2147483648]);
    case 1:
      return pick([
        "",
        "x",
        "auto",
        "null",
        "1e308",
        "-1",
        "\u0000",
        "\ud800",
        ...ODD_TEXT,
      ]);
    case 2:
      return pick([true, false, null]);
    case 3:
      return pick([[], {}, [null], { type: null }]);
    case 4:
      return nested(pick([50, 150, 1000, 5000]), "deep");
    case 5:
      return pick(PROTOTYPE_KEYS);
    case 6:
      return Object.fromEntries([[pick(PROTOTYPE_KEYS), pick([1, "x", {}, null])]]);
    case 7:
      return "z".repeat(pick([300, 5000, 100_000]));
    default:
      return pick([
        "gpt-test",
        "claude-test",
        "gemini-test",
        "image-test",
        "m".repeat(300),
        "local-ok",
        ...ODD_TEXT.map((text) => `local-${text}`),
      ]);
  }
}

/** Every path (keys from the root) to a value in `body`. */
function paths(body: Json, prefix: (string | number)[] = [], out: (string | number)[][] = []) {
  out.push(prefix);
  if (Array.isArray(body)) body.forEach((v, i) => paths(v, [...prefix, i], out));
  else if (body && typeof body === "object") {
    for (const [k, v] of Object.entries(body)) paths(v, [...prefix, k], out);
  }
  return out;
}

/** A structured mutation of `body`: a value replaced, a key removed or added. */
function mutate(body: Json, rand: () => number): Json {
  const copy = structuredClone(body) as Record<string, unknown>;
  const all = paths(copy).filter((p) => p.length > 0);
  const rounds = 1 + Math.floor(rand() * 3);
  for (let r = 0; r < rounds; r++) {
    const path = all[Math.floor(rand() * all.length)];
    let parent: Record<string | number, unknown> = copy;
    for (const key of path.slice(0, -1)) {
      const next = parent[key];
      if (!next || typeof next !== "object") break;
      parent = next as Record<string | number, unknown>;
    }
    const last = path.at(-1)!;
    const action = rand();
    if (action < 0.15) delete parent[last];
    else if (action < 0.3) parent[PROTOTYPE_KEYS[Math.floor(rand() * 5)] + "x"] = hostile(rand);
    else parent[last] = hostile(rand);
  }
  return copy;
}

/** The raw bytes to send: JSON, or broken in one of several ways. */
function encode(body: Json, rand: () => number): { bytes: Uint8Array<ArrayBuffer>; type: string } {
  const json = JSON.stringify(body) ?? "null";
  const enc = new TextEncoder();
  const roll = rand();
  if (roll < 0.05) {
    return {
      bytes: enc.encode(json.slice(0, Math.floor(json.length / 2))),
      type: "application/json",
    };
  }
  if (roll < 0.08) {
    const bytes = enc.encode(json);
    const broken = new Uint8Array(bytes.length + 2);
    broken.set(bytes);
    broken.set([0xc3, 0x28], Math.floor(rand() * bytes.length)); // invalid UTF-8
    return { bytes: broken, type: "application/json" };
  }
  if (roll < 0.1) return { bytes: enc.encode(json), type: "text/plain" };
  if (roll < 0.12) return { bytes: enc.encode(`[${json}]`), type: "application/json" };
  return { bytes: enc.encode(json), type: "application/json" };
}

/** The route's path, sometimes with a hostile model segment. */
function pathFor(target: Target, rand: () => number): string {
  if (!target.path.includes("/models/") || rand() > 0.15) return target.path;
  const names = [
    "%",
    "%ZZ",
    "%E0%A4%A",
    "__proto__",
    "constructor",
    "models%2F..%2F",
    "x".repeat(400),
    "%00",
    "local-%C3%A9",
    "local-%0D%0Ax-injected%3A%201",
    "local-%E6%A8%A1%E5%9E%8B",
    "local-%01",
    "local-%22%5C",
    "local-ok",
  ];
  return target.path.replace(
    /models\/[^:]+:/,
    `models/${names[Math.floor(rand() * names.length)]}:`,
  );
}

// deno-lint-ignore no-explicit-any
function checkEnvelope(format: Format, status: number, body: Record<string, any>, label: string) {
  if (format === "openai") {
    assert.equal(typeof body.error?.message, "string", label);
    assert.ok("type" in body.error && "param" in body.error && "code" in body.error, label);
  } else if (format === "anthropic") {
    assert.equal(body.type, "error", label);
    assert.equal(typeof body.error?.type, "string", label);
    assert.equal(typeof body.error?.message, "string", label);
  } else {
    assert.equal(body.error?.code, status, label);
    assert.equal(typeof body.error?.status, "string", label);
    assert.equal(typeof body.error?.message, "string", label);
  }
}

const REQUEST_HEADERS: ([string, string] | null)[] = [
  null,
  ["x-request-id", "é\u00ff"],
  ["x-request-id", "id with spaces\tand a tab"],
  ["x-request-id", "r".repeat(129)],
  ["anthropic-beta", "\u00e9\u00a0, context-1m-2025-08-07"],
  ["anthropic-version", "\u00ff"],
  null,
];

Deno.test(`fuzz: ${CASES} mutated requests on every route (seed ${SEED}): no 5xx, native errors`, async () => {
  const { key } = await gateway.createKey("fuzz", "--credit", "1000", "--rpm", "0");
  const rand = random(SEED);
  const cases = Array.from({ length: CASES }, (_, i) => {
    const target = TARGETS[i % TARGETS.length];
    const body = i < TARGETS.length ? target.body : mutate(target.body, rand);
    return { target, path: pathFor(target, rand), ...encode(body, rand), i };
  });
  const statuses = new Map<number, number>();
  const send = async (c: typeof cases[number]) => {
    const headers: Record<string, string> = { "content-type": c.type };
    // Header values a client can send (bytes up to 0xFF, no control characters but tab).
    const odd = REQUEST_HEADERS[c.i % REQUEST_HEADERS.length];
    if (odd) headers[odd[0]] = odd[1];
    if (c.target.format === "google") headers["x-goog-api-key"] = key;
    else if (c.target.format === "anthropic") {
      headers["x-api-key"] = key;
      headers["anthropic-version"] = "2023-06-01";
    } else headers.authorization = `Bearer ${key}`;
    const res = await fetch(`${gateway.url}${c.path}`, { method: "POST", headers, body: c.bytes });
    const label = `case ${c.i} (seed ${SEED}) ${c.path}: ${
      new TextDecoder().decode(c.bytes.subarray(0, 300))
    }`;
    const answer = await res.text();
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    assert.ok(res.status < 500, `${label}\n→ ${res.status} ${answer.slice(0, 300)}`);
    if (res.status >= 400) checkEnvelope(c.target.format, res.status, JSON.parse(answer), label);
  };
  for (let at = 0; at < cases.length; at += 8) await Promise.all(cases.slice(at, at + 8).map(send));
  // Every route answered its valid body, and the mutations reached the validators.
  assert.ok((statuses.get(200) ?? 0) >= TARGETS.length, JSON.stringify([...statuses]));
  assert.ok((statuses.get(400) ?? 0) > CASES / 4, JSON.stringify([...statuses]));
  // The money adds up: nothing held (once the poller has finished the video jobs), balance =
  // credits − settled charges.
  await eventually(async () => (await usageOf(gateway, key)).held_nanousd === 0);
  const books = await booksOf(gateway, "fuzz");
  assert.equal(books.held, 0);
  assert.equal(books.balance, 1000_000_000_000 - books.charged);
});
