import assert from "node:assert/strict";
import { encodeSse, type SseEvent, sseLine, SseScanner } from "../../../src/http/sse.ts";
import { JsonArrayScanner } from "../../../src/http/json_array.ts";
import {
  PassUnits,
  ReadUnits,
  RewriteUnits,
  UnitFramer,
  type UnitOutput,
} from "../../../src/http/relay.ts";
import { relayStream } from "../../../src/http/relay_stream.ts";
import { flushLog } from "../../../src/log.ts";
import { readBody } from "../../helpers/http.ts";
import { sleep, waitFor } from "../../helpers/poll.ts";

function scan(chunks: Uint8Array[]): { event: string; data: string }[] {
  const events: SseEvent[] = [];
  const scanner = new SseScanner((e) => events.push(e));
  for (const chunk of chunks) scanner.push(chunk);
  scanner.end();
  return events.map((e) => ({ event: e.event, data: e.data() }));
}

Deno.test("SseScanner reads named and data-only events, comments, CRLF and multi-line data, split anywhere", () => {
  const text = 'event: ping\ndata: {"type": "ping"}\n\n: comment\n\r\n' +
    'data: {"a":"é"}\r\n\r\ndata: one\ndata: two\n\nevent: x\ndata:no-space\n\ndata: last';
  const bytes = new TextEncoder().encode(text);
  const expected = [
    { event: "ping", data: '{"type": "ping"}' },
    { event: "", data: '{"a":"é"}' },
    { event: "", data: "one\ntwo" },
    { event: "x", data: "no-space" },
    { event: "", data: "last" },
  ];
  for (let cut = 0; cut <= bytes.length; cut++) {
    assert.deepEqual(scan([bytes.subarray(0, cut), bytes.subarray(cut)]), expected, `cut ${cut}`);
  }
  assert.deepEqual(scan(Array.from(bytes, (b) => new Uint8Array([b]))), expected, "byte by byte");
});

Deno.test("event names are read right however many there are, however long, whatever their bytes", () => {
  // The scanner keeps the names it decoded lately: more than it keeps, one too long to keep, one
  // in UTF-8, and names that differ in their last byte only, each met twice.
  const named = [
    ...Array.from({ length: 40 }, (_, i) => `kind.${i}`),
    "x".repeat(100),
    "é.ü",
    "delta_a",
    "delta_b",
  ];
  const text = [...named, ...named.toReversed()].map((name, i) => `event: ${name}\ndata: ${i}\n\n`)
    .join("");
  const events = scan([new TextEncoder().encode(text)]);
  assert.deepEqual(events.map((e) => e.event), [...named, ...named.toReversed()]);
  assert.deepEqual(events.map((e) => e.data), events.map((_, i) => String(i)));
  // A multi-line event's raw bytes join its lines with LF, as its data does.
  const [multi] = (() => {
    const out: SseEvent[] = [];
    const scanner = new SseScanner((e) => out.push(e));
    scanner.push(new TextEncoder().encode("data: a\r\ndata: b\ndata: c\n\n"));
    return out;
  })();
  assert.equal(multi.data(), "a\nb\nc");
  assert.equal(new TextDecoder().decode(multi.raw()), "a\nb\nc");
});

Deno.test("the scanner reads the recorded upstream streams event by event", async () => {
  const transcripts = new URL("../../fixtures/transcripts/", import.meta.url);
  const names = async (file: string) => {
    const recorded = JSON.parse(await Deno.readTextFile(new URL(file, transcripts)));
    return scan([new TextEncoder().encode(recorded.response.body_text)]);
  };
  const responses = await names("openai/responses-text-stream.json");
  assert.equal(responses[0].event, "response.created");
  assert.equal(responses.at(-1)!.event, "response.completed");
  assert.equal(JSON.parse(responses.at(-1)!.data).response.usage.output_tokens, 10);
  const anthropic = await names("anthropic/messages-text-stream.json");
  assert.deepEqual(
    anthropic.map((e) => e.event).filter((e) => e !== "ping" && e !== "content_block_delta"),
    [
      "message_start",
      "content_block_start",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ],
  );
  const gemini = await names("gemini/stream-text.json");
  assert.ok(gemini.length >= 3 && gemini.every((e) => e.event === ""));
  assert.equal(JSON.parse(gemini.at(-1)!.data).usageMetadata.candidatesTokenCount, 8);
});

Deno.test("encodeSse writes event and data lines", () => {
  assert.equal(encodeSse('{"a":1}', "message_start"), 'event: message_start\ndata: {"a":1}\n\n');
  assert.equal(encodeSse("x", undefined, "\r\n"), "data: x\r\n\r\n");
});

Deno.test("encodeSse splits data on every line break; sseLine writes one-line data the same", () => {
  assert.equal(encodeSse("a\r\nb\rc\nd", "x"), "event: x\ndata: a\ndata: b\ndata: c\ndata: d\n\n");
  assert.equal(encodeSse("a\nb", undefined, "\r\n"), "data: a\r\ndata: b\r\n\r\n");
  for (const data of ['{"a":"\\n\u2028"}', "", "[DONE]"]) {
    for (const event of [undefined, "", "message_delta"]) {
      for (const eol of ["\n", "\r\n"]) {
        assert.equal(sseLine(data, event, eol), encodeSse(data, event, eol));
      }
    }
  }
});

Deno.test("a scanned event decodes and parses its data once, for every reader", () => {
  const events: SseEvent[] = [];
  const scanner = new SseScanner((e) => events.push(e));
  scanner.push(new TextEncoder().encode('data: {"a":\ndata: [1]}\n\ndata: {"b"\n\n'));
  const [good, bad] = events;
  assert.equal(good.data(), '{"a":\n[1]}');
  assert.equal(good.data(), good.data());
  assert.deepEqual(good.json!(), { a: [1] });
  assert.equal(good.json!(), good.json!()); // the same value: parsed once
  assert.equal(new TextDecoder().decode(good.raw()), '{"a":\n[1]}');
  assert.throws(() => bad.json!(), SyntaxError);
  assert.throws(() => bad.json!(), SyntaxError);
});

/** The best of three runs of `work`, in milliseconds. */
function best(work: () => void): number {
  let fastest = Infinity;
  for (let run = 0; run < 3; run++) {
    const started = performance.now();
    work();
    fastest = Math.min(fastest, performance.now() - started);
  }
  return fastest;
}

function chunks(bytes: Uint8Array, size: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += size) out.push(bytes.subarray(at, at + size));
  return out;
}

Deno.test("one 8 MB data line costs about what 8 MB of ordinary events cost (linear in the bytes)", () => {
  const size = 8 * 1024 * 1024;
  const line = new TextEncoder().encode(`data: {"b64":"${"A".repeat(size)}"}\n\n`);
  const event = 'data: {"type":"delta","delta":"some text of an ordinary length"}\n\n';
  const ordinary = new TextEncoder().encode(event.repeat(Math.ceil(size / event.length)));
  const scanAll = (bytes: Uint8Array) => () => {
    let events = 0;
    const scanner = new SseScanner((e) => {
      events++;
      if (e.data().length < 10) throw new Error("data lost");
    });
    for (const chunk of chunks(bytes, 16 * 1024)) scanner.push(chunk);
    scanner.end();
    assert.ok(events > 0);
  };
  const pathological = best(scanAll(line));
  const normal = best(scanAll(ordinary));
  // The copy-per-chunk scanner this guards against took 4.3 s for the one 8 MB line.
  assert.ok(
    pathological < 10 * normal + 20,
    `one long line ${pathological.toFixed(1)} ms vs ordinary events ${normal.toFixed(1)} ms`,
  );
});

Deno.test("push reports where the last complete event ends, so a relay passes whole events", () => {
  const bytes = new TextEncoder().encode("data: one\n\ndata: tw");
  const scanner = new SseScanner(() => {});
  assert.equal(scanner.push(bytes), "data: one\n\n".length);
  assert.equal(scanner.push(new TextEncoder().encode("o\n")), -1, "no event completed");
  assert.equal(scanner.push(new TextEncoder().encode("\r\n")), 2, "CRLF blank line");
});

Deno.test("the JSON-array framer hands over each element whole, strings and escapes included", () => {
  const elements = [{ a: 'x]}"\\' }, { b: [1, { c: "[" }] }, { d: "é" }];
  const text = "[" + elements.map((e) => JSON.stringify(e)).join("\n,\r\n") + "\n]";
  const bytes = new TextEncoder().encode(text);
  for (const size of [1, 3, 7, bytes.length]) {
    const seen: unknown[] = [];
    const framer = new JsonArrayScanner((e) => seen.push(JSON.parse(e.data())));
    for (const chunk of chunks(bytes, size)) framer.push(chunk);
    assert.deepEqual(seen, elements, `chunks of ${size}`);
    assert.equal(framer.closed(), true);
  }
  const cut = new JsonArrayScanner(() => {});
  cut.push(new TextEncoder().encode('[{"a":1},{"b":'));
  assert.equal(cut.closed(), false);
});

const TAIL = "event: error\ndata: {}\n\n";

/** An SSE relay's stages: framed, read by a meter that says when it `finished`, then `out`. */
function stages(
  finished: () => boolean,
  out: UnitOutput = new PassUnits({ tail: () => new TextEncoder().encode(TAIL) }),
  read: (event: SseEvent) => void = () => {},
): [UnitFramer, ReadUnits, UnitOutput] {
  return [new UnitFramer("sse"), new ReadUnits({ onEvent: read, finished }), out];
}

/** An upstream body the test writes into (`send`). */
function writableUpstream(): {
  upstream: ReadableStream<Uint8Array>;
  send: ReadableStreamDefaultController<Uint8Array>;
} {
  let send!: ReadableStreamDefaultController<Uint8Array>;
  const upstream = new ReadableStream<Uint8Array>({
    start(controller) {
      send = controller;
    },
  });
  return { upstream, send };
}

/**
 * Relays `parts` (then an error, or the end) and returns what the client receives: the text, and
 * whether the body's transfer failed rather than ending cleanly.
 */
async function relayed(
  parts: string[],
  fail: boolean,
  finished: () => boolean,
  options: { abortFailed?: boolean; out?: UnitOutput } = {},
) {
  let ended = "";
  let next = 0;
  const upstream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (next < parts.length) controller.enqueue(new TextEncoder().encode(parts[next++]));
      else if (fail) controller.error(new Error("cut"));
      else controller.close();
    },
  });
  const body = relayStream(upstream, stages(finished, options.out), {
    onEnd: (how) => void (ended = how),
    abort: () => {},
    idleMs: 0,
    maxMs: 0,
    abortFailed: options.abortFailed,
  });
  const { text, failed } = await readBody(new Response(body));
  return { text, ended, failed };
}

Deno.test("the relay passes whole events only, and a cut stream ends in the error tail", async () => {
  const parts = ["event: a\ndata: 1\n\nevent: b\nda", "ta: 2\n\nevent: c\ndata: 3"];
  const cut = await relayed(parts, true, () => false);
  assert.equal(cut.text, "event: a\ndata: 1\n\nevent: b\ndata: 2\n\nevent: error\ndata: {}\n\n");
  assert.equal(cut.ended, "cut");
  const early = await relayed(parts, false, () => false);
  assert.equal(early.ended, "cut", "ended before its end-of-stream marker");
  const done = await relayed(parts, false, () => true);
  assert.equal(done.text, parts.join(""), "a finished stream passes byte for byte");
  assert.equal(done.ended, "done");
  assert.ok(!cut.failed && !early.failed && !done.failed, "each body ends cleanly");
});

Deno.test("an upstream that fails while its client is not reading is settled then, not at the next read", async () => {
  const { upstream, send: upstreamController } = writableUpstream();
  const ends: string[] = [];
  const body = relayStream(upstream, stages(() => false), {
    onEnd: (how) => void ends.push(how),
    abort: () => {},
    idleMs: 0,
    maxMs: 0,
  });
  const encode = (text: string) => new TextEncoder().encode(text);
  // The relay reads one chunk ahead of its client, which reads nothing: the first event waits in
  // the body, the second in the upstream's stream, when the upstream fails.
  upstreamController.enqueue(encode("event: a\ndata: 1\n\n"));
  await new Promise((resolve) => setTimeout(resolve, 10));
  upstreamController.enqueue(encode("event: b\ndata: 2\n\n"));
  upstreamController.error(new Error("the upstream's connection reset"));
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.deepEqual(ends, ["cut"], "settled before the client reads again");
  // Reading now, the client gets what the relay held, then the error tail, once.
  const { text } = await readBody(new Response(body));
  assert.equal(text, "event: a\ndata: 1\n\n" + TAIL);
  assert.deepEqual(ends, ["cut"]);
});

Deno.test("a chunk that arrives as the client hangs up goes no further down the stages: not metered, not sent", async () => {
  const { upstream, send } = writableUpstream();
  const read: string[] = [];
  const ends: string[] = [];
  const body = relayStream(upstream, stages(() => false, undefined, (e) => read.push(e.data())), {
    onEnd: (how) => void ends.push(how),
    abort: () => {},
    idleMs: 0,
    maxMs: 0,
  });
  const encode = (text: string) => new TextEncoder().encode(text);
  const reader = body.getReader();
  send.enqueue(encode("data: 1\n\n"));
  assert.equal(new TextDecoder().decode((await reader.read()).value), "data: 1\n\n");
  // The relay is reading ahead; the next chunk comes in the very turn the client goes away.
  await sleep(10);
  send.enqueue(encode("data: 2\n\n"));
  await reader.cancel("gone");
  await sleep(10);
  assert.deepEqual(read, ["1"], "the chunk after the hang-up is not read (nor metered)");
  assert.deepEqual(ends, ["cancel"]);
});

Deno.test("a client gone while a chunk's events are sent ends its call as cancelled, without an upstream warning", async () => {
  const { upstream, send } = writableUpstream();
  const ends: string[] = [];
  // Deno's server cancels a body from within its `enqueue` when the client's connection is gone:
  // here the reading of the chunk's second event does the same, before that event is sent.
  const hangUp = (event: SseEvent) => {
    if (event.data() === "2") void reader.cancel("gone");
  };
  const body = relayStream(upstream, stages(() => false, undefined, hangUp), {
    onEnd: (how) => void ends.push(how),
    abort: () => {},
    idleMs: 0,
    maxMs: 0,
  });
  const reader = body.getReader();
  const lines: string[] = [];
  const original = Deno.stdout.writeSync;
  Deno.stdout.writeSync = (bytes: Uint8Array) => {
    lines.push(new TextDecoder().decode(bytes));
    return bytes.length;
  };
  try {
    const first = reader.read();
    send.enqueue(new TextEncoder().encode("data: 1\n\ndata: 2\n\ndata: 3\n\n"));
    assert.equal((await first).done, true, "the client's read ends with its cancel");
    await sleep(10);
    flushLog();
  } finally {
    Deno.stdout.writeSync = original;
  }
  assert.deepEqual(ends, ["cancel"], "ended once, as the client's cancel");
  assert.deepEqual(lines.join("").split("\n").filter((l) => l.includes("could not be read")), []);
});

Deno.test("a stream whose last unit is the upstream's own error ends with it: no second error", async () => {
  const content = 'data: {"choices":[{"delta":{"content":"Hi"}}]}\n\n';
  for (
    const error of [
      'data: {"error":{"message":"Rate limit reached","code":"rate_limit_exceeded"}}\n\n',
      'event: error\ndata: {"type":"error","error":{"type":"overloaded_error"}}\n\n',
    ]
  ) {
    for (const fail of [false, true]) {
      const { text, ended } = await relayed([content, error], fail, () => false);
      assert.equal(text, content + error, `the upstream's error is the end (${error})`);
      assert.equal(ended, "cut");
    }
  }
  // An error the upstream did not terminate (it ends with the stream) is sent as the end too.
  const unterminated = 'data: {"error":{"message":"gone"}}';
  const held = await relayed([content, unterminated], false, () => false);
  assert.equal(held.text, content + unterminated);
  // Content after an error: the stream's end is not the upstream's error, and gets the tail.
  const after = await relayed([content, 'data: {"error":{}}\n\n', content], false, () => false);
  assert.equal(after.text, content + 'data: {"error":{}}\n\n' + content + TAIL);
});

Deno.test("abortFailed: a body that ends in its error is aborted after it, a clean one closed", async () => {
  const parts = ["event: a\ndata: 1\n\n", "event: b\ndata: 2\n\n"];
  for (const fail of [true, false]) {
    const cut = await relayed(parts, fail, () => false, { abortFailed: true });
    assert.equal(cut.text, parts.join("") + TAIL, "every byte up to the error tail arrives");
    assert.equal(cut.failed, true, "then the transfer fails");
    assert.equal(cut.ended, "cut");
  }
  const upstreamError = await relayed(
    [parts[0], "event: error\ndata: {}\n\n"],
    false,
    () => false,
    {
      abortFailed: true,
    },
  );
  assert.equal(upstreamError.text, parts[0] + "event: error\ndata: {}\n\n");
  assert.equal(upstreamError.failed, true, "the upstream's own error ends it as a failure too");
  const done = await relayed(parts, false, () => true, { abortFailed: true });
  assert.equal(done.text, parts.join(""));
  assert.equal(done.failed, false, "a finished stream ends cleanly");
  // A finished stream whose output ends in the protocol's error (a translation without an answer).
  const failing = (failed: boolean) =>
    new RewriteUnits({
      unit: (event) => `<${event.event}>`,
      end: () => (failed ? "<error>" : "<end>"),
      cut: () => new TextEncoder().encode("<cut>"),
      failed: () => failed,
    });
  const noAnswer = await relayed(parts, false, () => true, {
    abortFailed: true,
    out: failing(true),
  });
  assert.deepEqual([noAnswer.text, noAnswer.failed], ["<a><b><error>", true]);
  const answer = await relayed(parts, false, () => true, {
    abortFailed: true,
    out: failing(false),
  });
  assert.deepEqual([answer.text, answer.failed], ["<a><b><end>", false]);
  const noTail = await relayed(parts, true, () => false, {
    abortFailed: true,
    out: new PassUnits(),
  });
  assert.deepEqual(
    [noTail.text, noTail.failed],
    [parts.join(""), true],
    "no tail: aborted at once",
  );
});

Deno.test("a stream cut while its client is not reading is settled at once", async () => {
  for (const abortFailed of [false, true]) {
    let ended = "";
    const upstream = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(new TextEncoder().encode("data: tick\n\n"));
        return new Promise((r) => setTimeout(r, 20));
      },
    });
    const body = relayStream(upstream, stages(() => false), {
      onEnd: (how) => void (ended = how),
      abort: () => {},
      idleMs: 0,
      maxMs: 100,
      abortFailed,
    });
    const reader = body.getReader();
    await reader.read(); // then the client stops reading
    // Nothing reads while this waits: the stream ends by its time limit alone.
    await waitFor(() => ended === "cut", { what: "the stream cut at its time limit" });
    let rest = "";
    let failed = false;
    for (;;) {
      const read = await reader.read().catch(() => null);
      if (!read) failed = true;
      if (!read || read.done) break;
      rest += new TextDecoder().decode(read.value);
    }
    assert.match(rest, /event: error/, "the error tail still arrives");
    assert.equal(failed, abortFailed, "then the body ends, or with abortFailed is aborted");
  }
});

Deno.test("the relay's stages are Transformers: piped as TransformStreams, whole events pass as they are", async () => {
  const parts = ["event: a\ndata: 1\n\nevent: b\nda", "ta: 2\n\n", "event: c\ndata: 3\n\n"];
  const seen: string[] = [];
  const body = ReadableStream.from(parts.map((part) => new TextEncoder().encode(part)))
    .pipeThrough(new TransformStream(new UnitFramer("sse")))
    .pipeThrough(
      new TransformStream(
        new ReadUnits({
          onEvent: (event) => seen.push(event.event),
          finished: () => true,
        }),
      ),
    )
    .pipeThrough(new TransformStream(new PassUnits()));
  assert.equal(await new Response(body).text(), parts.join(""));
  assert.deepEqual(seen, ["a", "b", "c"]);
});
