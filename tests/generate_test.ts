/** The content-generation protocol through the gateway, driven by `@google/genai` and raw HTTP. */
import assert from "node:assert/strict";
import { GoogleGenAI, Modality } from "./deps.ts";
import { eventually, startStack, UPSTREAM_KEY, usageOf } from "./helpers/setup.ts";
import { goog, type Json, post as postTo, readBody, sseEvents } from "./helpers/http.ts";

const stack = await startStack();
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

const RATE = { input: 2500, cached: 250, output: 15000, imageOutput: 30000 };

/** The SDK pointed at the gateway; `v1beta` as the spec and Gemini CLI use, or the SDK's default. */
async function client(account: string, credit = "5", apiVersion: string | undefined = "v1beta") {
  const { key } = await gateway.createKey(account, "--credit", credit);
  const ai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: gateway.url, apiVersion } });
  return { key, ai };
}

Deno.test("generateContent answers and bills prompt, candidate and thought tokens", async () => {
  const { key, ai } = await client("gen-create");
  const response = await ai.models.generateContent({
    model: "gemini-test",
    contents: "What is the capital of France?",
    config: { systemInstruction: "Be brief.", temperature: 0 },
  });
  assert.equal(response.text, "You said: What is the capital of France?");
  const u = response.usageMetadata!;
  assert.ok(u.promptTokenCount! > 0 && u.candidatesTokenCount! > 0);
  const usage = await usageOf(gateway, key);
  assert.equal(
    usage.spent_nanousd,
    u.promptTokenCount! * RATE.input + u.candidatesTokenCount! * RATE.output,
  );
  const seen = (await stack.upstreamRequests()).at(-1)!;
  assert.equal(seen.path, "/gemini/v1beta/models/gemini-2.5-flash:generateContent");
  // The SDK's default API version (v1) reaches the same handler.
  const { ai: v1 } = await client("gen-create-v1", "5", undefined);
  const viaV1 = await v1.models.generateContent({ model: "gemini-test", contents: "hi" });
  assert.equal(viaV1.text, "You said: hi");
  assert.equal(seen.headers["x-goog-api-key"], UPSTREAM_KEY);
  assert.ok(!JSON.stringify(seen).includes(key));
});

Deno.test("generateContentStream relays every fragment; only the last fragment's usage is billed", async () => {
  const { key, ai } = await client("gen-stream");
  const stream = await ai.models.generateContentStream({
    model: "gemini-test",
    contents: "Tell me something in several fragments please",
  });
  let text = "";
  let last;
  let fragments = 0;
  for await (const chunk of stream) {
    fragments++;
    text += chunk.text ?? "";
    last = chunk;
  }
  assert.ok(fragments > 2);
  assert.equal(text, "You said: Tell me something in several fragments please");
  assert.equal(last!.candidates![0].finishReason, "STOP");
  await eventually(async () => (await usageOf(gateway, key)).requests === 1);
  const u = last!.usageMetadata!;
  const usage = await usageOf(gateway, key);
  assert.equal(usage.by_unit.output_tokens.quantity, u.candidatesTokenCount);
  assert.equal(
    usage.spent_nanousd,
    u.promptTokenCount! * RATE.input + u.candidatesTokenCount! * RATE.output,
  );
  const seen = (await stack.upstreamRequests()).at(-1)!;
  assert.equal(seen.path, "/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
});

Deno.test("streamGenerateContent without alt=sse returns one JSON array and bills its last element", async () => {
  const { key } = await client("gen-array");
  const res = await fetch(`${gateway.url}/v1beta/models/gemini-test:streamGenerateContent`, {
    method: "POST",
    headers: { "x-goog-api-key": key, "content-type": "application/json" },
    body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "array please" }] }] }),
  });
  assert.equal(res.status, 200);
  const fragments = await res.json();
  assert.ok(Array.isArray(fragments) && fragments.length > 1);
  const u = fragments.at(-1).usageMetadata;
  await eventually(async () => (await usageOf(gateway, key)).requests === 1);
  assert.equal(
    (await usageOf(gateway, key)).spent_nanousd,
    u.promptTokenCount * RATE.input + u.candidatesTokenCount * RATE.output,
  );
});

Deno.test("countTokens returns the upstream's totalTokens, free", async () => {
  const { key, ai } = await client("gen-count", "5", undefined); // the SDK's default version
  const counted = await ai.models.countTokens({ model: "gemini-test", contents: "one two three" });
  assert.equal(counted.totalTokens, 3);
  assert.equal((await usageOf(gateway, key)).requests, 0);
});

Deno.test("a function-call round trip: functionCall out, functionResponse in", async () => {
  const { ai } = await client("gen-tools");
  const tools = [{
    functionDeclarations: [{
      name: "get_weather",
      description: "Current weather",
      parametersJsonSchema: {
        type: "object",
        properties: { city: { type: "string" } },
        required: ["city"],
      },
    }],
  }];
  const first = await ai.models.generateContent({
    model: "gemini-test",
    contents: "Weather in Paris?",
    config: { tools },
  });
  const call = first.functionCalls![0];
  assert.equal(call.name, "get_weather");
  assert.deepEqual(call.args, { city: "Paris" });
  const modelTurn = first.candidates![0].content!;
  assert.ok(modelTurn.parts![0].thoughtSignature, "thoughtSignature comes back to be replayed");
  const second = await ai.models.generateContent({
    model: "gemini-test",
    contents: [
      { role: "user", parts: [{ text: "Weather in Paris?" }] },
      modelTurn,
      {
        role: "user",
        parts: [{ functionResponse: { name: "get_weather", response: { temp: "18C" } } }],
      },
    ],
    config: { tools },
  });
  assert.match(second.text!, /the tool returned .*18C/);
  const seen = (await stack.upstreamRequests()).at(-1)!;
  const contents = (seen.body as { contents: { parts: Record<string, unknown>[] }[] }).contents;
  assert.equal(contents[1].parts[0].thoughtSignature, modelTurn.parts![0].thoughtSignature);
});

Deno.test("image output: the IMAGE tokens of candidatesTokensDetails are billed at the image rate", async () => {
  const { key, ai } = await client("gen-image");
  const response = await ai.models.generateContent({
    model: "gemini-3-pro-image-test",
    contents: "A lighthouse at dusk",
    config: {
      responseModalities: [Modality.TEXT, Modality.IMAGE],
      imageConfig: { aspectRatio: "16:9", imageSize: "2K" },
    },
  });
  const image = response.candidates![0].content!.parts!.find((p) => p.inlineData);
  assert.equal(image!.inlineData!.mimeType, "image/png");
  const png = Uint8Array.from(atob(image!.inlineData!.data!), (c) => c.charCodeAt(0));
  assert.deepEqual([...png.slice(0, 8)], [137, 80, 78, 71, 13, 10, 26, 10]);
  const u = response.usageMetadata!;
  const imageTokens = u.candidatesTokensDetails!.find((d) => d.modality === "IMAGE")!.tokenCount!;
  assert.equal(imageTokens, 1680);
  const usage = await usageOf(gateway, key);
  assert.equal(usage.by_unit.image_output_tokens.quantity, 1680);
  assert.equal(
    usage.spent_nanousd,
    u.promptTokenCount! * RATE.input + (u.candidatesTokenCount! - 1680) * RATE.output +
      1680 * RATE.imageOutput,
  );
  const seen = (await stack.upstreamRequests()).at(-1)!;
  assert.deepEqual(
    (seen.body as Record<string, Record<string, unknown>>).generationConfig.imageConfig,
    {
      aspectRatio: "16:9",
      imageSize: "2K",
    },
  );
});

Deno.test("an image edit: reference images and an instruction in contents, image back", async () => {
  const { key, ai } = await client("gen-edit");
  const reference = {
    inlineData: {
      mimeType: "image/png",
      data:
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==",
    },
  };
  const response = await ai.models.generateContent({
    model: "gemini-3.1-flash-image-test",
    contents: [{ role: "user", parts: [reference, reference, { text: "Make the sky purple" }] }],
    config: { responseModalities: [Modality.IMAGE], imageConfig: { imageSize: "0.5K" } },
  });
  const parts = response.candidates![0].content!.parts!;
  assert.deepEqual(parts.map((p) => Object.keys(p).filter((k) => k !== "thoughtSignature")), [[
    "inlineData",
  ]]);
  const seen = (await stack.upstreamRequests()).at(-1)!;
  assert.equal(seen.path, "/gemini/v1beta/models/gemini-3.1-flash-image-preview:generateContent");
  const sent = (seen.body as { contents: { parts: unknown[] }[] }).contents[0].parts;
  assert.equal(sent.length, 3);
  const usage = await usageOf(gateway, key);
  assert.equal(usage.by_unit.image_output_tokens.quantity, 560);
});

Deno.test("each image rule is refused with 400 INVALID_ARGUMENT naming the field, before any upstream call", async () => {
  const { key, ai } = await client("gen-rules");
  const before = await stack.upstreamCount();
  const image = { inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" } };
  const cases: [string, Record<string, unknown>, number, RegExp][] = [
    [
      "gemini-3-pro-image-test",
      { responseModalities: ["TEXT"] },
      0,
      /'generationConfig\.responseModalities': must be \["TEXT","IMAGE"\] or \["IMAGE"\]/,
    ],
    [
      "gemini-3-pro-image-test",
      { imageConfig: { aspectRatio: "7:3" } },
      0,
      /'generationConfig\.imageConfig\.aspectRatio': must be one of 1:1, 3:2/,
    ],
    [
      "gemini-2.5-flash-image-test",
      { imageConfig: { imageSize: "1K" } },
      0,
      /'generationConfig\.imageConfig\.imageSize': is not supported by this model/,
    ],
    [
      "gemini-3-pro-image-test",
      { imageConfig: { imageSize: "0.5K" } },
      0,
      /imageSize': must be one of 1K, 2K, 4K/,
    ],
    [
      "gemini-3.1-flash-lite-image-test",
      { imageConfig: { imageSize: "2K" } },
      0,
      /imageSize': must be one of 1K for this model/,
    ],
    ["gemini-3.1-flash-image-test", {}, 15, /'contents': carries 15 reference images; at most 14/],
  ];
  for (const [model, config, images, message] of cases) {
    await assert.rejects(
      ai.models.generateContent({
        model,
        contents: [{ role: "user", parts: [...Array(images).fill(image), { text: "draw" }] }],
        config,
      }),
      (error: unknown) => {
        const e = error as { status?: number; message: string };
        assert.equal(e.status, 400, model);
        const body = JSON.parse(e.message);
        assert.equal(body.error.status, "INVALID_ARGUMENT");
        assert.match(body.error.message, message);
        return true;
      },
    );
  }
  assert.equal(await stack.upstreamCount(), before, "no upstream call");
  assert.equal((await usageOf(gateway, key)).requests, 0);
});

Deno.test("auth on /v1beta: only x-goog-api-key; ?key= refused with a pointer to the header", async () => {
  const { key } = await client("gen-auth");
  const url = `${gateway.url}/v1beta/models/gemini-test:generateContent`;
  const body = JSON.stringify({ contents: [{ parts: [{ text: "hi" }] }] });
  const post = (headers: Record<string, string>, query = "") =>
    fetch(url + query, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body,
    });
  const viaQuery = await post({}, `?key=${key}`);
  assert.equal(viaQuery.status, 401);
  const queryBody = await viaQuery.json();
  assert.equal(queryBody.error.code, 401);
  assert.equal(queryBody.error.status, "UNAUTHENTICATED");
  assert.match(queryBody.error.message, /x-goog-api-key header/);
  assert.ok(!JSON.stringify(queryBody).includes(key));
  const schemes: Record<string, string>[] = [{}, { authorization: `Bearer ${key}` }, {
    "x-api-key": key,
  }];
  for (const headers of schemes) {
    const res = await post(headers);
    assert.equal(res.status, 401, JSON.stringify(headers));
    assert.match((await res.json()).error.message, /x-goog-api-key/);
  }
  const wrong = await post({ "x-goog-api-key": "sy-not-a-key" });
  assert.equal(wrong.status, 401);
  assert.deepEqual(await wrong.json(), {
    error: { code: 401, message: "Invalid API key.", status: "UNAUTHENTICATED" },
  });
  const ok = await post({ "x-goog-api-key": key });
  assert.equal(ok.status, 200);
  await ok.body?.cancel();
});

Deno.test("Google-format errors: validation 400, unknown model 404, upstream 429 relayed, 500 → 502", async () => {
  const { key } = await client("gen-errors");
  const post = (model: string, body: unknown) =>
    fetch(`${gateway.url}/v1beta/models/${model}:generateContent`, {
      method: "POST",
      headers: { "x-goog-api-key": key, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  const cases: [string, unknown, number, string, RegExp][] = [
    ["gemini-test", {}, 400, "INVALID_ARGUMENT", /contents/],
    [
      "gemini-test",
      { contents: [{ role: "bot", parts: [] }] },
      400,
      "INVALID_ARGUMENT",
      /contents\[0\]\.role/,
    ],
    [
      "gemini-test",
      { contents: [{ parts: [{ inlineData: { mimeType: "image/png" } }] }] },
      400,
      "INVALID_ARGUMENT",
      /inlineData\.data/,
    ],
    ["gemini-nope", { contents: [{ parts: [{ text: "x" }] }] }, 404, "NOT_FOUND", /gemini-nope/],
    [
      "gpt-test",
      { contents: [{ parts: [{ text: "x" }] }], generationConfig: { stopSequences: ["x"] } },
      400,
      "INVALID_ARGUMENT",
      /generationConfig\.stopSequences.*Responses protocol/,
    ],
    [
      "gemini-test",
      { contents: [{ parts: [{ text: "[[emulate status=429]]" }] }] },
      429,
      "RESOURCE_EXHAUSTED",
      /Emulated error 429/,
    ],
    [
      "gemini-test",
      { contents: [{ parts: [{ text: "[[emulate status=500]]" }] }] },
      502,
      "UNAVAILABLE",
      /status 500/,
    ],
    [
      "gemini-test",
      { contents: [{ parts: [{ text: "x".repeat(70_000) }] }] },
      413,
      "INVALID_ARGUMENT",
      /larger than the limit/,
    ],
  ];
  for (const [model, body, status, code, message] of cases) {
    const res = await post(model, body);
    assert.equal(res.status, status, JSON.stringify(body).slice(0, 60));
    const json = await res.json();
    assert.equal(json.error.code, status);
    assert.equal(json.error.status, code);
    assert.match(json.error.message, message);
  }
  assert.equal((await usageOf(gateway, key)).requests, 0);
});

Deno.test("structured output: a JSON response schema passes through and the answer follows it", async () => {
  const { ai } = await client("gen-json");
  const response = await ai.models.generateContent({
    model: "gemini-test",
    contents: "Pick a model for this task",
    config: {
      responseMimeType: "application/json",
      responseJsonSchema: {
        type: "object",
        properties: {
          reasoning: { type: "string" },
          model_choice: { type: "string", enum: ["flash", "pro"] },
        },
        required: ["reasoning", "model_choice"],
      },
    },
  });
  assert.deepEqual(JSON.parse(response.text!), { reasoning: "Paris", model_choice: "flash" });
});

/** Each way a Gemini client streams, passed through and translated (to Messages, to Responses). */
const STREAMS: { name: string; model: string; sse: boolean }[] = [
  { name: "passed through, SSE", model: "gemini-test", sse: true },
  { name: "passed through, JSON array", model: "gemini-test", sse: false },
  { name: "translated, SSE", model: "claude-test", sse: true },
  { name: "translated, JSON array", model: "gpt-test", sse: false },
];

for (const { name, model, sse } of STREAMS) {
  Deno.test(`a stream the upstream cuts (${name}) ends in an error element, then a failed transfer`, async () => {
    const { key } = await client(`gen-cut-${model}-${sse ? "sse" : "array"}`);
    const path = `/v1beta/models/${model}:streamGenerateContent${sse ? "?alt=sse" : ""}`;
    // Cut (the connection fails) or stopped early (closed cleanly before the end), past output.
    for (const fault of ["cut=12", "stop=12"]) {
      const res = await postTo(gateway.url, path, goog(key), {
        contents: [{ role: "user", parts: [{ text: `words [[emulate words=60 ${fault}]]` }] }],
      });
      assert.equal(res.status, 200);
      const { text, failed } = await readBody(res);
      const elements = sse ? sseEvents(text).map((e) => e.data as Json) : JSON.parse(text);
      const last = elements.at(-1);
      assert.equal(
        last.error?.code,
        502,
        `${fault}: the error element ends what was sent: ${text}`,
      );
      assert.ok(elements.slice(0, -1).some((e: Json) => e.candidates), `${fault}: text came first`);
      assert.equal(elements.filter((e: Json) => e.error).length, 1, `${fault}: one error`);
      // No clean end: a client that takes the end of the body for success sees a failure.
      assert.equal(failed, true, `${fault}: the transfer fails after the error element`);
    }
    // Billed for what was relayed, as any cut stream.
    await eventually(async () => (await usageOf(gateway, key)).requests === 2);
    const usage = await usageOf(gateway, key);
    assert.ok(usage.spent_nanousd > 0);
    assert.equal(usage.held_nanousd, 0);
    assert.ok(!gateway.errors.some((line) => line.includes("unhandled error")));
  });
}

Deno.test("generateContentStream raises on a stream the upstream cuts, passed through or translated", async () => {
  const { key, ai } = await client("gen-cut-sdk");
  for (const model of ["gemini-test", "claude-test"]) {
    const stream = await ai.models.generateContentStream({
      model,
      contents: "words [[emulate words=60 cut=12]]",
    });
    let text = "";
    await assert.rejects(async () => {
      for await (const chunk of stream) text += chunk.text ?? "";
    }, `${model}: the SDK raises`);
    assert.ok(text.length > 0, `${model}: after the text relayed`);
  }
  await eventually(async () => (await usageOf(gateway, key)).requests === 2);
  assert.ok((await usageOf(gateway, key)).spent_nanousd > 0);
});
