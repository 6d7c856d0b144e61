/**
 * The chat chunk read without parsing (`plainDelta`): it reads exactly what `JSON.parse` reads, or
 * nothing. A property test writes seeded chunks member by member — of the shapes vendors send, and
 * perturbed: contents with every kind of escape, finish reasons, tool calls, usage, errors, a
 * second choice, keys written twice, reordered or escaped, whitespace, invalid JSON — and checks
 * `plainDelta` against `JSON.parse`, then the chat decoder and meter with and without it on the
 * same streams. `PLAIN_SEED` and `PLAIN_CASES` override the defaults.
 */
import assert from "node:assert/strict";
import { plainDelta, plainDeltaReader } from "../../../../src/protocols/chat/plain_delta.ts";
import { chatDecoder } from "../../../../src/protocols/chat/stream.ts";
import { chatMeter } from "../../../../src/protocols/chat/usage.ts";
import { encodeSse, SseScanner } from "../../../../src/http/sse.ts";
import type { CanonicalEvent } from "../../../../src/translate/ir.ts";
import { int, pick, type Rand, random } from "../../../helpers/random.ts";
import chatToolStream from "../../../fixtures/transcripts/openai/chat-tool-call-stream-usage.json" with {
  type: "json",
};

const SEED = Number(Deno.env.get("PLAIN_SEED") ?? 20261126);
const CASES = Number(Deno.env.get("PLAIN_CASES") ?? 3000);
const STREAMS = Math.ceil(CASES / 5);

/** Reads no chunk: the decoder and meter parse every one. */
const none = () => undefined;

// ---------------------------------------------------------------------------------------------
// Chunks, member by member

/** A member as written: its name's JSON text and its value's. */
type Member = [name: string, value: string];

/** What a chunk is for `plainDelta`: read it (a vendor's plain shape), may read it, must not. */
type Kind = "plain" | "may" | "never";

interface Chunk {
  text: string;
  kind: Kind;
  /** What the perturbation was, for messages. */
  how: string;
}

const name = (text: string) => JSON.stringify(text);
const member = (key: string, value: unknown): Member => [name(key), JSON.stringify(value)];

const PIECES = [
  "word ",
  " said",
  "",
  '"',
  "\\",
  "/",
  "\\n",
  '\\"',
  "é",
  "中文",
  "😀",
  "👩‍👩‍👧",
  "\n",
  "\t",
  "\r\n",
  "\u0000",
  "\u0001",
  "\u001f",
  "\u007f",
  "\u2028",
  "\ud800",
  "\udfff",
  "}],",
  '"},"finish_reason":"stop"',
  '","usage":{"prompt_tokens":1}',
];

/** A content of a few pieces of every kind. */
function contentOf(rand: Rand): string {
  let text = "";
  for (let i = int(rand, 0, 4); i > 0; i--) text += pick(rand, PIECES);
  return text;
}

/** A string's JSON as the encoders vendors use write it: plain, ASCII-only, `\/`, upper hex. */
function stringJson(rand: Rand, text: string): string {
  const json = JSON.stringify(text);
  switch (int(rand, 0, 4)) {
    case 0:
      return json.replace(/[\u0080-\uffff]/g, (c) => "\\u" + hex4(c));
    case 1:
      return json.replaceAll("/", "\\/");
    case 2:
      return json.replace(/[\u0080-\uffff]/g, (c) => "\\u" + hex4(c).toUpperCase());
    default:
      return json;
  }
}

const hex4 = (c: string) => c.charCodeAt(0).toString(16).padStart(4, "0");

/** The identity members of the chunk, in the order of one vendor or another. */
function identity(rand: Rand): Member[] {
  const id = member("id", "chatcmpl-" + int(rand, 0, 1e9));
  const object = member("object", "chat.completion.chunk");
  const created = member("created", 1795648326);
  const model = member("model", pick(rand, ["gpt-5.4", "deepseek-chat", "qwen/qwen3 \u00e9"]));
  const tier = member("service_tier", pick(rand, ["default", null]));
  const fingerprint = member("system_fingerprint", pick(rand, ["fp_emulator", null]));
  switch (int(rand, 0, 3)) {
    case 0: // the emulator's
      return [id, created, model, tier, fingerprint, object];
    case 1: // OpenAI's
      return [id, object, created, model, tier, fingerprint];
    case 2: // DeepSeek's, Ollama's
      return [id, object, created, model, fingerprint];
    default: // vLLM's, Mistral's
      return [id, object, created, model];
  }
}

/** A plain chunk's members (before any perturbation), as `[members, choice, delta]`. */
function plainChunk(rand: Rand, content: string): [Member[], Member[], Member[]] {
  const delta: Member[] = [[name("content"), stringJson(rand, content)]];
  if (rand() < 0.2) delta.unshift(member("role", "assistant"));
  const choice: Member[] = [member("index", 0), member("delta", null)];
  if (rand() < 0.8) choice.push(member("logprobs", null));
  if (rand() < 0.8) choice.push(member("finish_reason", null));
  const top = [...identity(rand), member("choices", null)];
  if (rand() < 0.7) top.push(member("usage", null));
  if (rand() < 0.3) top.push(member("obfuscation", "Qp" + int(rand, 0, 99)));
  return [top, choice, delta];
}

const objectText = (members: Member[]) =>
  "{" + members.map(([k, v]) => k + ":" + v).join(",") + "}";

/** The chunk's text, the delta and the choice written in their members (`null` until then). */
function write(top: Member[], choice: Member[], delta: Member[]): string {
  const choiceText = objectText(
    choice.map(([k, v]) => k === name("delta") ? [k, objectText(delta)] : [k, v]),
  );
  return objectText(top.map(([k, v]) => k === name("choices") ? [k, `[${choiceText}]`] : [k, v]));
}

/** A perturbation: what it does to the members, and what it makes of the chunk. */
type Perturb = (rand: Rand, top: Member[], choice: Member[], delta: Member[]) => Kind;

const at = (list: Member[], key: string) => list.findIndex(([k]) => k === name(key));
/** Sets a member's value; one the object lacks is put anywhere among its members. */
const set = (rand: Rand, list: Member[], key: string, value: unknown) => {
  const i = at(list, key);
  if (i >= 0) list[i] = [list[i][0], JSON.stringify(value)];
  else list.splice(int(rand, 0, list.length), 0, member(key, value));
};
const shuffle = (rand: Rand, list: Member[]) => {
  for (let i = list.length - 1; i > 0; i--) {
    const j = int(rand, 0, i);
    [list[i], list[j]] = [list[j], list[i]];
  }
};

/** Sets `key` of the chunk, its choice or its delta to one of `values`. */
const setting = (
  where: "top" | "choice" | "delta",
  key: string,
  values: unknown[],
  kind: Kind,
): Perturb =>
(rand, top, choice, delta) => {
  set(rand, { top, choice, delta }[where], key, pick(rand, values));
  return kind;
};

const PERTURBATIONS: Record<string, Perturb> = {
  finish: setting("choice", "finish_reason", ["stop", "length", ""], "never"),
  toolCalls: setting(
    "delta",
    "tool_calls",
    [[{ index: 0, function: { arguments: "{}" } }]],
    "never",
  ),
  refusal: setting("delta", "refusal", ["no", null], "never"),
  reasoning: setting("delta", "reasoning_content", ["hmm"], "never"),
  content: setting("delta", "content", [null, 7, ["x"]], "never"),
  usage: setting("top", "usage", [{ prompt_tokens: 3, completion_tokens: 1 }, {}], "never"),
  choiceUsage: setting("choice", "usage", [{ prompt_tokens: 3 }, null], "never"),
  error: setting("top", "error", [{ message: "slow down", type: "rate_limit" }, null], "never"),
  index: setting("choice", "index", [1, -0, 0.0, "0", null], "may"),
  logprobs: setting("choice", "logprobs", [{ content: [] }], "never"),
  extraTop: setting("top", "x_groq", [{ id: "req" }, "x", null], "never"),
  extraChoice: setting("choice", "stop_reason", [null], "never"),
  extraDelta: setting("delta", "audio", [null], "never"),
  role: setting("delta", "role", ["assistant", "tool", 1], "may"),
  created: setting("top", "created", [1.5e9, -0, "1", 1e300, null], "may"),
  id: setting("top", "id", [null, 1], "never"),
  duplicate: (rand, top, choice, delta) => {
    const list = pick(rand, [top, choice, delta]);
    const [k, v] = pick(rand, list);
    const again: Member = k === name("choices") || k === name("delta") ? [k, v] : pick(rand, [
      [k, v] as Member,
      [k, JSON.stringify(pick(rand, ["stop", "other", 1, null]))] as Member,
    ]);
    list.splice(int(rand, 0, list.length), 0, again);
    return "never";
  },
  reorder: (rand, top, choice, delta) => (shuffle(rand, pick(rand, [top, choice, delta])), "may"),
  escapedKey: (rand, top, choice, delta) => {
    const list = pick(rand, [top, choice, delta]);
    const i = int(rand, 0, list.length - 1);
    const key = JSON.parse(list[i][0]);
    list[i] = [
      '"' + key.replace(/[a-z]$/, (c: string) => "\\u00" + hex4(c).slice(2)) + '"',
      list[i][1],
    ];
    return "may";
  },
};

/** Whole-text perturbations: the chunk's text changed after it was written. */
const TEXT_PERTURBATIONS: Record<string, (rand: Rand, text: string) => [string, Kind]> = {
  space: (rand, text) => {
    const i = text.indexOf(pick(rand, [":", ",", "{", "}", "[", "]"]), int(rand, 0, text.length));
    const ws = pick(rand, [" ", "\t", "\n", "\r\n"]);
    return [i < 0 ? text + ws : text.slice(0, i) + ws + text.slice(i), "may"];
  },
  around: (rand, text) => [pick(rand, [" ", "\t"]) + text + pick(rand, ["", " "]), "may"],
  truncated: (rand, text) => [text.slice(0, int(rand, 0, text.length - 1)), "never"],
  trailing: (rand, text) => [text + pick(rand, ["}", ",", "x", "{}", "]"]), "never"],
  rawControl: (rand, text) => {
    const i = text.indexOf('"content":"');
    if (i < 0) return [text, "may"];
    const j = i + 11;
    return [text.slice(0, j) + pick(rand, ["\u0001", "\n", "\u001f"]) + text.slice(j), "never"];
  },
  badEscape: (rand, text) => {
    const i = text.indexOf('"content":"');
    if (i < 0) return [text, "may"];
    const j = i + 11;
    return [
      text.slice(0, j) + pick(rand, ["\\x", "\\u12", "\\uZZZZ", "\\'", "\\u12x"]) + text.slice(j),
      "never",
    ];
  },
  array: (rand, text) => {
    const i = text.indexOf('"choices":[');
    if (i < 0) return [text, "may"];
    const second = '{"index":1,"delta":{"content":"b"},"finish_reason":null}';
    const j = i + 11;
    const inserted = rand() < 0.5
      ? text.slice(0, j) + second + "," + text.slice(j)
      : text.replace(/\}\](,|\}$)/, (_, after) => "}," + second + "]" + after);
    return [inserted, "never"];
  },
  emptyChoices: (
    _r,
    text,
  ) => [text.replace(/"choices":\[[^]*\](?=,"usage"|,"obfuscation"|\}$)/, '"choices":[]'), "never"],
};

/** A chunk: a plain one, or a plain one perturbed once or twice. */
function chunkOf(rand: Rand): Chunk {
  const [top, choice, delta] = plainChunk(rand, contentOf(rand));
  let kind: Kind = "plain";
  const hows: string[] = [];
  const worst = (k: Kind) => {
    if (k === "never" || kind === "never") kind = "never";
    else kind = "may";
  };
  for (let n = rand() < 0.3 ? 0 : int(rand, 1, 2); n > 0; n--) {
    const [how, perturb] = pick(rand, Object.entries(PERTURBATIONS));
    hows.push(how);
    worst(perturb(rand, top, choice, delta));
  }
  let text = write(top, choice, delta);
  if (rand() < 0.25) {
    const [how, perturb] = pick(rand, Object.entries(TEXT_PERTURBATIONS));
    hows.push(how);
    const [changed, k] = perturb(rand, text);
    text = changed;
    worst(k);
  }
  return { text, kind, how: hows.join("+") || "plain" };
}

// ---------------------------------------------------------------------------------------------
// plainDelta against JSON.parse

/** What `JSON.parse` reads as the chunk's text: the content of a chunk that is only text. */
function parsedContent(text: string): string | undefined {
  const chunk = JSON.parse(text);
  const choice = chunk.choices[0];
  return choice.delta.content;
}

Deno.test("plainDelta reads the plain chunks of vendors' streams, as JSON.parse does", () => {
  const emulator =
    '{"id":"chatcmpl-d7699127402a60666b6a8b3c69e4e8","created":1795648326,"model":"gpt-5.4","service_tier":"default","system_fingerprint":"fp_emulator","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" said"},"logprobs":null,"finish_reason":null}],"usage":null}';
  assert.equal(plainDelta(emulator), " said");
  const openai =
    '{"id":"chatcmpl-Dx0X","object":"chat.completion.chunk","created":1782955817,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_d0469e1700","choices":[{"index":0,"delta":{"content":"Paris"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"C63r"}';
  assert.equal(plainDelta(openai), "Paris");
  assert.equal(plainDelta('{"choices":[{"index":0,"delta":{"content":""}}]}'), "");
  assert.equal(
    plainDelta('{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"}}]}'),
    "Hi",
  );
  const escaped =
    '{"choices":[{"index":0,"delta":{"content":"a\\"b\\\\c\\/\\n\\u00e9\\ud83d\\ude00"}}]}';
  assert.equal(plainDelta(escaped), 'a"b\\c/\né😀');
  assert.equal(plainDelta(escaped), parsedContent(escaped));
});

Deno.test("plainDelta leaves every other chunk to the parse", () => {
  const plain = (choice: string, after = "") =>
    `{"id":"c","object":"chat.completion.chunk","choices":[${choice}]${after}}`;
  const text = '{"index":0,"delta":{"content":"x"},"logprobs":null,"finish_reason":null}';
  assert.equal(plainDelta(plain(text)), "x");
  for (
    const other of [
      plain(text.replace('"finish_reason":null', '"finish_reason":"stop"')),
      plain(text.replace('{"content":"x"}', '{"content":"x","tool_calls":[]}')),
      plain(text.replace('{"content":"x"}', '{"content":"x","refusal":null}')),
      plain(text.replace('{"content":"x"}', '{"content":"x","content":"y"}')),
      plain(text.replace('"logprobs":null', '"logprobs":{"content":[]}')),
      plain(text.replace('"index":0', '"index":1')),
      plain(text + "," + text),
      plain(text, ',"usage":{"prompt_tokens":1}'),
      plain(text, ',"usage":null,"usage":null'),
      plain(text, ',"error":{"message":"x"}'),
      plain(text).replace('{"id"', '{"error":null,"id"'),
      plain(text, ',"choices":[]'),
      plain(text).replace('"id":"c"', '"id":"c","id":"d"'),
      plain(text).replace('"id":"c"', '"i\\u0064":"c"'),
      plain(text).replace("{", "{ "),
      plain(text) + "\n",
      plain(text).slice(0, -1),
      plain(text.replace('"x"', '"\u0001"')),
      plain(text.replace('"x"', '"\\x"')),
      "[DONE]",
      "",
    ]
  ) {
    assert.equal(plainDelta(other), undefined, other);
  }
});

Deno.test("plainDelta leaves a chunk of more than 8192 characters to the parse, whatever it holds", () => {
  const chunk = (content: string) => `{"choices":[{"index":0,"delta":{"content":"${content}"}}]}`;
  assert.equal(plainDelta(chunk("a".repeat(8000))), "a".repeat(8000));
  for (
    const long of [
      chunk("a".repeat(9000)),
      chunk("\\n".repeat(4_000_000)),
      chunk("\\n".repeat(4_000_000)).slice(0, -4),
      "{" + '"id":"a",'.repeat(1_000_000) + '"choices":[]}',
    ]
  ) {
    assert.equal(plainDelta(long), undefined);
  }
});

Deno.test(`plainDelta: ${CASES} seeded chunks (seed ${SEED}) read as JSON.parse reads them, or left to it`, () => {
  const rand = random(SEED);
  let read = 0;
  for (let n = 0; n < CASES; n++) {
    const { text, kind, how } = chunkOf(rand);
    const label = `case ${n} (seed ${SEED}, ${how}): ${text}`;
    const content = plainDelta(text);
    if (kind === "plain") assert.notEqual(content, undefined, label);
    if (content === undefined) continue;
    read++;
    assert.notEqual(kind, "never", label);
    assert.equal(content, parsedContent(text), label);
  }
  assert.ok(read > CASES / 5, `only ${read} of ${CASES} read`);
});

Deno.test("a stream's reader keeps the identity it checked, and reads every chunk as plainDelta does", () => {
  const chunk = (identity: string, content: string) =>
    `{${identity}"choices":[{"index":0,"delta":{"content":${JSON.stringify(content)}}}]}`;
  const a = '"id":"a","model":"m",';
  const b = '"id":"b","model":"m",';
  const twice = '"id":"a","id":"b","model":"m",';
  const reader = plainDeltaReader();
  // Interleaved streams, a repeated member after a checked identity, then the checked one again.
  const texts = [
    chunk(a, "one"),
    chunk(a, "two"),
    chunk(b, "three"),
    chunk(twice, "four"),
    chunk(a, "five"),
    chunk(a, 'say "six"'),
  ];
  assert.deepEqual(texts.map(reader), texts.map(plainDelta));
  assert.deepEqual(texts.map(reader), ["one", "two", "three", undefined, "five", 'say "six"']);
  // A seeded mix, every chunk read as plainDelta reads it.
  const rand = random(SEED + 1);
  const seeded = plainDeltaReader();
  for (let n = 0; n < CASES; n++) {
    const { text } = chunkOf(rand);
    assert.equal(seeded(text), plainDelta(text), text);
  }
});

// ---------------------------------------------------------------------------------------------
// The decoder and the meter, with and without it

/** What the meter and the decoder make of a stream's text, read as the relay reads it. */
function readStream(text: string, plain?: typeof none) {
  const events: CanonicalEvent[] = [];
  const decoder = plain
    ? chatDecoder((e) => events.push(e), "p", plain)
    : chatDecoder((e) => events.push(e), "p");
  const meter = plain ? chatMeter(false, plain) : chatMeter();
  const scanner = new SseScanner((event) => {
    meter.onEvent(event);
    decoder.push(event);
  });
  scanner.push(new TextEncoder().encode(text));
  scanner.end();
  decoder.end();
  return {
    events,
    usage: meter.usage(),
    complete: meter.complete(),
    finished: meter.finished(),
    bytes: meter.outputBytes(),
  };
}

const ROLE =
  '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}';
const FINISH =
  '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}';
const USAGE =
  '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":4,"total_tokens":9}}';

Deno.test(`chat decoder and meter: ${STREAMS} seeded streams (seed ${SEED}) read the same with and without plainDelta`, () => {
  const rand = random(SEED + 1);
  for (let n = 0; n < STREAMS; n++) {
    const chunks = Array.from({ length: int(rand, 1, 6) }, () => chunkOf(rand).text);
    // Now and then the generated chunk comes first, where the decoder parses it for the start.
    const data = rand() < 0.1
      ? [...chunks, FINISH, USAGE, "[DONE]"]
      : [ROLE, ...chunks, FINISH, USAGE, "[DONE]"];
    const text = data.map((d) => encodeSse(d)).join("");
    assert.deepEqual(
      readStream(text),
      readStream(text, none),
      `stream ${n} (seed ${SEED}): ${text}`,
    );
  }
});

/** A stream as the emulator writes it: its chunks' members in its order. */
function emulatorStream(pieces: string[]): string {
  const common =
    '"id":"chatcmpl-d76","created":1795648326,"model":"gpt-5.4","service_tier":"default","system_fingerprint":"fp_emulator","object":"chat.completion.chunk"';
  const chunk = (choices: string, usage = "null") =>
    `data: {${common},"choices":${choices},"usage":${usage}}\n\n`;
  const choice = (delta: string, finish = "null") =>
    `[{"index":0,"delta":${delta},"logprobs":null,"finish_reason":${finish}}]`;
  return chunk(choice('{"role":"assistant","content":"","refusal":null}')) +
    pieces.map((p) => chunk(choice(`{"content":${JSON.stringify(p)}}`))).join("") +
    chunk(choice("{}", '"stop"')) +
    chunk("[]", '{"prompt_tokens":13,"completion_tokens":3,"total_tokens":16}') +
    "data: [DONE]\n\n";
}

Deno.test("the recorded chat stream and an emulator's stream read the same with and without plainDelta", () => {
  for (
    const text of [chatToolStream.response.body_text, emulatorStream(["You", ' "said"', " é😀\n"])]
  ) {
    const fast = readStream(text);
    assert.deepEqual(fast, readStream(text, none));
    assert.ok(fast.events.some((e) => e.type === "finish"));
  }
  const { events, bytes } = readStream(emulatorStream(["You", ' "said"', " é😀\n"]));
  assert.equal(
    events.filter((e) => e.type === "text-delta").map((e) => "delta" in e && e.delta).join(""),
    'You "said" é😀\n',
  );
  assert.equal(bytes, new TextEncoder().encode('You "said" é😀\n').length);
});

Deno.test("a chunk read by two readers in turn (a meter, then a decoder) reads the same for both", () => {
  const meter = plainDeltaReader();
  const decoder = plainDeltaReader();
  const chunk = (content: string, extra = "") =>
    `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m"${extra},"choices":[{"index":0,"delta":{"content":${
      JSON.stringify(content)
    }},"finish_reason":null}]}`;
  const cases: [string, string | undefined][] = [
    [chunk("Hello"), "Hello"],
    [chunk('say "hi"\n'), 'say "hi"\n'],
    [chunk("Hello"), "Hello"],
    [chunk("twice", ',"id":"c2"'), undefined], // a member named twice: for the full parse
    [chunk("x".repeat(9000)), undefined], // longer than the expression reads
    [chunk("again"), "again"],
  ];
  for (const [text, expected] of cases) {
    assert.equal(meter(text), expected, text.slice(0, 80));
    assert.equal(decoder(text), expected, text.slice(0, 80));
    assert.equal(decoder(text), expected, "asked again");
    assert.equal(plainDelta(text), expected);
  }
});
