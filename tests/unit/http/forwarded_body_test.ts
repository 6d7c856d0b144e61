/**
 * A pass-through call's body: the client's text as it is unless a decisive member repeats (or may,
 * written with escapes), and the hold's cap put in without the parsed body.
 */
import assert from "node:assert/strict";
import {
  cappedBody,
  cappedUpstreamBody,
  forwardedBody,
  memberSlot,
  withMembers,
  withScalar,
  withUpstreamModel,
} from "../../../src/http/forwarded_body.ts";
import { capSlot } from "../../../src/protocols/generate/metering.ts";
import { TextParts } from "../../../src/http/utf8.ts";

const bodyOf = (text: string) => ({ text, value: JSON.parse(text) as Record<string, unknown> });

/** The text for `cap` when the slot is the top-level member `name`. */
const capped = (text: string, name: string, cap: number | undefined) =>
  cappedBody(text, memberSlot(JSON.parse(text), name))(cap);

Deno.test("a body goes as the client wrote it, unless a decisive member repeats or is escaped", () => {
  const plain = '{ "model": "m",\n  "max_tokens": 10, "messages": [] }';
  assert.equal(forwardedBody(bodyOf(plain)), plain);
  const twice = '{"max_tokens": 10, "max_tokens": 20}';
  assert.equal(forwardedBody(bodyOf(twice)), '{"max_tokens":20}');
  // `JSON.parse` reads the name with its escapes undone: a repeat the names alone do not show.
  const escaped = '{"max_tokens": 10, "max\\u005ftokens": 20}';
  assert.equal(forwardedBody(bodyOf(escaped)), '{"max_tokens":20}');
  const model = '{"mod\\u0065l": "cheap", "max_tokens": 5}';
  assert.equal(
    withUpstreamModel(bodyOf(model), { upstreamId: "cheap" }),
    '{"model":"cheap","max_tokens":5}',
  );
  // Escaped text elsewhere is no reason: only escaped word characters are.
  const quoted = '{"messages": [{"content": "say \\"hi\\"\\n\\u00e9"}]}';
  assert.equal(forwardedBody(bodyOf(quoted)), quoted);
});

Deno.test("the hold's cap replaces the client's own in its text", () => {
  const text = '{"model":"m", "max_tokens" : 32000 ,"stream":true}';
  assert.equal(capped(text, "max_tokens", undefined), text);
  assert.equal(capped(text, "max_tokens", 512), '{"model":"m", "max_tokens" : 512 ,"stream":true}');
  assert.equal(capped('{"max_tokens":1.5e3}', "max_tokens", 7), '{"max_tokens":7}');
  // A nested member of the same name (in a tool's schema, say): parsed again, the top one set.
  const nested = '{"max_tokens":100,"tools":[{"input_schema":{"max_tokens":3}}]}';
  assert.deepEqual(JSON.parse(capped(nested, "max_tokens", 9)), {
    max_tokens: 9,
    tools: [{ input_schema: { max_tokens: 3 } }],
  });
  // Null is not a number: parsed again.
  assert.equal(capped('{"a":1,"max_tokens":null}', "max_tokens", 4), '{"a":1,"max_tokens":4}');
});

Deno.test("a body without a cap gets the hold's at its end", () => {
  assert.equal(
    capped('{"model":"m"}\n', "max_output_tokens", 64),
    '{"model":"m","max_output_tokens":64}\n',
  );
  assert.equal(capped("{ }", "max_tokens", 1), '{"max_tokens":1}');
  // A nested member of the name is not the body's own.
  const nested = '{"tools":[{"parameters":{"max_tokens":{"type":"integer"}}}]}';
  assert.deepEqual(JSON.parse(capped(nested, "max_tokens", 2)), {
    ...JSON.parse(nested),
    max_tokens: 2,
  });
  assert.equal(withMembers('{"a":1}', {}), '{"a":1}');
});

Deno.test("withScalar changes only the one member of its name that holds a number or string", () => {
  assert.equal(withScalar('{"n":1}', "n", 2), '{"n":2}');
  assert.equal(withScalar('{"n":1,"x":{"n":1}}', "n", 2), undefined);
  assert.equal(withScalar('{"n" : "a\\"b\\\\", "m":1}', "n", "c"), '{"n" : "c", "m":1}');
  assert.equal(withScalar('{"n":"1"}', "n", 2), '{"n":2}');
  assert.equal(withScalar('{"n":[1]}', "n", 2), undefined);
  assert.equal(withScalar('{"n":"open', "n", 2), undefined);
  assert.equal(withScalar('{"m":1}', "n", 2), undefined);
});

Deno.test("the upstream's model id goes into the client's own text", () => {
  const text =
    '{\n  "model": "alias",\n  "messages": [{"role":"user","content":"the \\"model\\": x"}]\n}';
  const swapped = withUpstreamModel(bodyOf(text), { upstreamId: "real-1" });
  assert.equal(swapped, text.replace('"alias"', '"real-1"'));
  // The gateway's own members are appended when the body has none of them…
  assert.equal(
    withUpstreamModel(bodyOf('{"model":"a","stream":true}'), { upstreamId: "b" }, {
      stream_options: { include_usage: true },
    }),
    '{"model":"b","stream":true,"stream_options":{"include_usage":true}}',
  );
  // …and replace the client's where it has some: the body is written again.
  assert.equal(
    withUpstreamModel(bodyOf('{ "model":"a", "tools":[1] }'), { upstreamId: "a" }, { tools: [2] }),
    '{"model":"a","tools":[2]}',
  );
  // A model named twice: the one the gateway read is the one sent.
  assert.equal(
    withUpstreamModel(bodyOf('{"model":"a","model":"b"}'), { upstreamId: "c" }),
    '{"model":"c"}',
  );
});

Deno.test("Gemini's cap goes in generationConfig, whichever spelling the client used", () => {
  const put = (text: string, cap: number) =>
    JSON.parse(cappedBody(text, capSlot(JSON.parse(text)))(cap));
  const contents = [{ parts: [{ text: "x" }] }];
  assert.deepEqual(put(JSON.stringify({ contents }), 8), {
    contents,
    generationConfig: { maxOutputTokens: 8 },
  });
  const camel = JSON.stringify({ contents, generationConfig: { maxOutputTokens: 900, topK: 2 } });
  assert.equal(cappedBody(camel, capSlot(JSON.parse(camel)))(8), camel.replace("900", "8"));
  assert.deepEqual(
    put(JSON.stringify({ contents, generation_config: { max_output_tokens: 900 } }), 8),
    {
      contents,
      generationConfig: { maxOutputTokens: 8 },
    },
  );
  assert.deepEqual(put(JSON.stringify({ contents, generationConfig: { topK: 2 } }), 8), {
    contents,
    generationConfig: { topK: 2, maxOutputTokens: 8 },
  });
});

Deno.test("put in any way, the model, patch and cap read back as the body parsed with them set", () => {
  const members = [
    '"model":"alias"',
    '"max_tokens":4096',
    '"stream":true',
    '"messages":[{"a":[1,{}],"model":"x\\"y"}]',
  ];
  for (let i = 0; i < 300; i++) {
    const order = members.filter(() => Math.random() < 0.8).sort(() => Math.random() - 0.5);
    const text = `{${order.join(Math.random() < 0.5 ? "," : " ,\n ")}}`;
    const body = bodyOf(text);
    const patch = Math.random() < 0.5 ? { stream_options: { include_usage: true } } : undefined;
    const cap = Math.random() < 0.5 ? 1 + Math.floor(Math.random() * 5000) : undefined;
    const upstream = withUpstreamModel(body, { upstreamId: "real" }, patch);
    const sent = JSON.parse(cappedBody(upstream, memberSlot(body.value, "max_tokens"))(cap));
    assert.deepEqual(sent, {
      ...body.value,
      ...("model" in body.value ? { model: "real" } : {}),
      ...patch,
      ...(cap === undefined ? {} : { max_tokens: cap }),
    }, text);
  }
});

Deno.test("a long body with its model id replaced goes as its parts, the client's text around the new id", () => {
  const turns = Array.from(
    { length: 400 },
    (_, i) => ({ role: "user", content: `turn ${i} ${"x".repeat(40)}` }),
  );
  const text = JSON.stringify({ model: "alias", max_tokens: 4096, messages: turns });
  const body = bodyOf(text);
  const sent = cappedUpstreamBody(body, { upstreamId: "real-1" }, undefined, "max_tokens");
  const whole = sent(undefined);
  assert.ok(whole instanceof TextParts, "long text is kept as parts");
  assert.equal(String(whole), text.replace('"alias"', '"real-1"'));
  assert.equal(String(whole), withUpstreamModel(body, { upstreamId: "real-1" }));
  // A cap put in, the body is one text again, the cap in the client's place.
  const capped = sent(100);
  assert.equal(typeof capped, "string");
  assert.deepEqual(JSON.parse(String(capped)), {
    ...JSON.parse(text),
    model: "real-1",
    max_tokens: 100,
  });
  // Short bodies, the same model, and patches stay one text.
  assert.equal(
    typeof cappedUpstreamBody(bodyOf('{"model":"a"}'), { upstreamId: "b" }, undefined, "n")(
      undefined,
    ),
    "string",
  );
  assert.equal(
    typeof cappedUpstreamBody(
      bodyOf(text.replace('"alias"', '"real-1"')),
      { upstreamId: "real-1" },
      undefined,
      "max_tokens",
    )(undefined),
    "string",
  );
  assert.equal(
    typeof cappedUpstreamBody(body, { upstreamId: "real-1" }, { extra: 1 }, "max_tokens")(
      undefined,
    ),
    "string",
  );
});

Deno.test("a body goes as it was sent unless a decisive member repeats, call after call", () => {
  const plain = '{"model":"m","max_tokens":16,"messages":[],"stream":false}';
  const repeated = '{"model":"m","max_tokens":16,"messages":[],"max_tokens":4000}';
  const escaped = '{"model":"m","max_tokens":16,"max\\u005ftokens":4000}';
  // In turn and again: each call reads its body from the start, whatever the last one read.
  for (let round = 0; round < 2; round++) {
    assert.equal(forwardedBody(bodyOf(plain)), plain);
    assert.equal(forwardedBody(bodyOf(repeated)), JSON.stringify(JSON.parse(repeated)));
    assert.equal(forwardedBody(bodyOf(plain)), plain);
    assert.equal(forwardedBody(bodyOf(escaped)), JSON.stringify(JSON.parse(escaped)));
  }
  // Members that are not decisive may repeat: the text goes as it is.
  const other = '{"model":"m","metadata":{"a":1},"metadata":{"a":2}}';
  assert.equal(forwardedBody(bodyOf(other)), other);
});
