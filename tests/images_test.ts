/**
 * Image generation and editing through the gateway: the `openai` SDK (JSON, multipart edits,
 * streams) and raw HTTP (field order, streamed uploads past the size limit). Billed per image at
 * the catalog's size/quality price.
 */
import assert from "node:assert/strict";
import { OpenAI, toFile } from "./deps.ts";
import { startStack, usageOf } from "./helpers/setup.ts";

const LIMIT = 200_000;
const stack = await startStack({
  server: { maxBodyBytes: 65536, maxUploadBytes: LIMIT },
  models: {
    "free-image-test": { provider: "openai", kind: "image", upstream: "gpt-image-1", free: true },
    "image-input-test": {
      provider: "openai",
      kind: "image",
      upstream: "gpt-image-1",
      price: { image: 0.042, input: 5, imageInput: 10 },
    },
  },
});
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

const PNG = Uint8Array.from(
  atob(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==",
  ),
  (c) => c.charCodeAt(0),
);

async function client(account: string) {
  const { key } = await gateway.createKey(account, "--credit", "5");
  return { key, openai: new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 }) };
}

Deno.test("images.generate: n images at the size/quality price", async () => {
  const { key, openai } = await client("img-generate");
  const result = await openai.images.generate({
    model: "image-test",
    prompt: "A lighthouse at dawn",
    n: 2,
    size: "1024x1024",
    quality: "high",
  });
  assert.equal(result.data!.length, 2);
  assert.ok(result.data![0].b64_json!.startsWith("iVBOR"));
  assert.equal(result.quality, "high");
  assert.ok(result.usage!.output_tokens > 0);
  const usage = await usageOf(gateway, key);
  assert.deepEqual(usage.by_unit, {
    images: { quantity: 2, spent_usd: "0.334", spent_nanousd: 334_000_000 },
    // The answer's input tokens are recorded; this model prices no input.
    input_tokens: { quantity: result.usage!.input_tokens, spent_usd: "0.00", spent_nanousd: 0 },
  });
  assert.equal(usage.by_model["image-test"].requests, 1);
});

Deno.test("the answer's own size and quality decide the rate when the request said auto", async () => {
  const { key, openai } = await client("img-auto");
  const result = await openai.images.generate({
    model: "image-test",
    prompt: "auto",
    quality: "auto",
  });
  assert.equal(result.quality, "medium");
  assert.equal((await usageOf(gateway, key)).spent_nanousd, 40_000_000);
});

Deno.test("input tokens an image answer reports are billed on top: text and image input", async () => {
  const { key } = await client("img-input");
  const post = (body: unknown) =>
    fetch(`${gateway.url}/v1/images/edits`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  const answer = await (await post({
    model: "image-input-test",
    prompt: "Combine these two pictures into one",
    images: [{ image_url: "https://example.com/a.png" }, {
      image_url: "https://example.com/b.png",
    }],
  })).json();
  const details = answer.usage.input_tokens_details;
  assert.ok(details.text_tokens > 0 && details.image_tokens > 0);
  const usage = await usageOf(gateway, key);
  assert.deepEqual(usage.by_unit.input_tokens.quantity, details.text_tokens);
  assert.deepEqual(usage.by_unit.image_input_tokens.quantity, details.image_tokens);
  assert.equal(
    usage.spent_nanousd,
    42_000_000 + details.text_tokens * 5_000 + details.image_tokens * 10_000,
  );
  // Streamed, each completed event repeats the request's input: it is counted once.
  const streamed = await post({
    model: "image-input-test",
    prompt: "Two of them",
    images: [{ image_url: "https://example.com/a.png" }],
    n: 2,
    stream: true,
  });
  assert.equal((await streamed.text()).match(/event: image_edit\.completed/g)?.length, 2);
  const after = await usageOf(gateway, key);
  assert.equal(after.by_unit.images.quantity, 3);
  assert.equal(after.by_unit.image_input_tokens.quantity, details.image_tokens + 323);
});

Deno.test("xAI image models: url answers, billed per image", async () => {
  const { key, openai } = await client("img-xai");
  const result = await openai.images.generate({
    model: "grok-image-test",
    prompt: "A red kite",
    n: 3,
    response_format: "url",
  });
  assert.equal(result.data!.length, 3);
  assert.match(result.data![0].url!, /^https:\/\//);
  assert.equal((await stack.upstreamRequests()).at(-1)!.path, "/xai/v1/images/generations");
  assert.equal((await usageOf(gateway, key)).spent_nanousd, 3 * 20_000_000);
});

Deno.test("images.edit sends multipart (image[], mask) through, with the model rewritten", async () => {
  const { key, openai } = await client("img-edit");
  const result = await openai.images.edit({
    model: "image-test",
    image: [
      await toFile(PNG, "a.png", { type: "image/png" }),
      await toFile(PNG, "b.png", { type: "image/png" }),
    ],
    mask: await toFile(PNG, "mask.png", { type: "image/png" }),
    prompt: "Combine these",
    quality: "low",
  });
  // Only the upstream model id (gpt-image-1) gets GPT-image answers with usage and quality.
  assert.equal(result.quality, "low");
  assert.equal(result.data!.length, 1);
  assert.ok(result.usage!.input_tokens_details!.image_tokens > 0);
  const seen = (await stack.upstreamRequests()).at(-1)!;
  assert.equal(seen.path, "/openai/v1/images/edits");
  assert.match(seen.headers["content-type"], /^multipart\/form-data; boundary=/);
  assert.equal(seen.headers.authorization, `Bearer ${"upstream-secret-1234"}`);
  assert.equal((await usageOf(gateway, key)).spent_nanousd, 11_000_000);
});

Deno.test("a streamed generation relays the image events and bills the completed images", async () => {
  const { key, openai } = await client("img-stream");
  const stream = await openai.images.generate({
    model: "image-test",
    prompt: "streamed",
    stream: true,
    partial_images: 2,
    size: "1024x1024",
    quality: "high",
  });
  const types: string[] = [];
  for await (const event of stream) types.push(event.type);
  assert.deepEqual(types, [
    "image_generation.partial_image",
    "image_generation.partial_image",
    "image_generation.completed",
  ]);
  const usage = await usageOf(gateway, key);
  assert.equal(usage.by_unit.images.quantity, 1);
  assert.equal(usage.spent_nanousd, 167_000_000);
});

Deno.test("a streamed generation is billed at the size and quality its completed events state", async () => {
  const { key } = await client("img-stream-auto");
  const res = await fetch(`${gateway.url}/v1/images/generations`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({
      model: "image-test",
      prompt: "fine detail [[emulate detail=1]]",
      stream: true,
      n: 2,
      quality: "auto",
    }),
  });
  const text = await res.text();
  assert.equal(text.match(/"quality":"high"/g)?.length, 2);
  assert.equal(text.match(/event: image_generation\.completed/g)?.length, 2);
  const usage = await usageOf(gateway, key);
  assert.equal(usage.by_unit.images.quantity, 2);
  assert.equal(usage.spent_nanousd, 2 * 167_000_000, "the high rate, as delivered");
});

/** A multipart body built by hand, in the given field order. */
function multipart(
  boundary: string,
  parts: [string, string | Uint8Array, string?][],
): Uint8Array<ArrayBuffer> {
  const enc = new TextEncoder();
  const chunks: Uint8Array[] = [];
  for (const [name, value, filename] of parts) {
    const disposition = `form-data; name="${name}"${filename ? `; filename="${filename}"` : ""}`;
    const type = filename ? "Content-Type: image/png\r\n" : "";
    chunks.push(enc.encode(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n${type}\r\n`));
    chunks.push(typeof value === "string" ? enc.encode(value) : value);
    chunks.push(enc.encode("\r\n"));
  }
  chunks.push(enc.encode(`--${boundary}--\r\n`));
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.length;
  }
  return out;
}

function postEdit(key: string, body: BodyInit, boundary: string) {
  return fetch(`${gateway.url}/v1/images/edits`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${key}`,
      "content-type": `multipart/form-data; boundary=${boundary}`,
    },
    body,
    // @ts-ignore: Deno's fetch takes duplex for streamed bodies
    duplex: "half",
  });
}

/** A body delivered in small chunks, without a content-length. */
function chunked(
  bytes: Uint8Array<ArrayBuffer>,
  size = 16 * 1024,
): ReadableStream<Uint8Array<ArrayBuffer>> {
  let offset = 0;
  return new ReadableStream({
    pull(controller) {
      if (offset >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(offset, offset + size));
      offset += size;
    },
  });
}

Deno.test("the model field may come after the files, and a chunked upload streams through", async () => {
  const { key } = await client("img-order");
  const boundary = "----switchyard-test-boundary";
  const big = new Uint8Array(120_000).fill(7);
  const body = multipart(boundary, [
    ["image[]", big, "big.png"],
    ["prompt", "make it blue"],
    ["n", "2"],
    ["model", "image-test"],
  ]);
  const res = await postEdit(key, chunked(body), boundary);
  assert.equal(res.status, 200, await res.clone().text());
  const answer = await res.json();
  assert.equal(answer.data.length, 2);
  assert.equal(answer.quality, "medium");
  const seen = (await stack.upstreamRequests()).at(-1)!;
  const rewritten = body.length - "image-test".length + "gpt-image-1".length;
  assert.deepEqual(seen.body, { bytes: rewritten });
  assert.equal((await usageOf(gateway, key)).spent_nanousd, 2 * 40_000_000);
});

Deno.test("every priced field counts wherever it stands in the form, and model may appear once", async () => {
  const { key } = await client("img-fields-after");
  const boundary = "----switchyard-fields";
  const body = multipart(boundary, [
    ["model", "image-test"],
    ["image", PNG, "a.png"],
    ["prompt", "ten of them"],
    ["quality", "high"],
    ["size", "1024x1024"],
    ["n", "10"],
  ]);
  const res = await postEdit(key, body, boundary);
  assert.equal(res.status, 200, await res.clone().text());
  const answer = await res.json();
  assert.equal(answer.data.length, 10);
  assert.equal(answer.quality, "high");
  assert.equal((await usageOf(gateway, key)).spent_nanousd, 10 * 167_000_000);
  // An account that cannot cover ten high-quality images is refused before the upstream.
  const { key: poor } = await gateway.createKey("img-fields-poor", "--credit", "0.05");
  const before = await stack.upstreamCount();
  const refused = await postEdit(poor, body, boundary);
  assert.equal(refused.status, 402);
  assert.match((await refused.json()).error.message, /1\.67 USD/);
  assert.equal(await stack.upstreamCount(), before, "no upstream call");
  const poorUsage = await usageOf(gateway, poor);
  assert.equal(poorUsage.balance_nanousd, 50_000_000);
  // A second model field is refused, wherever it stands.
  const twice = multipart(boundary, [
    ["model", "image-test"],
    ["image", PNG, "a.png"],
    ["prompt", "x"],
    ["model", "gpt-image-1"],
  ]);
  const duplicate = await postEdit(key, twice, boundary);
  assert.equal(duplicate.status, 400);
  const { error } = await duplicate.json();
  assert.equal(error.param, "model");
  assert.match(error.message, /more than once/);
});

Deno.test("a free image model takes uploads from an account without balance", async () => {
  const { key } = await gateway.createKey("img-free");
  const boundary = "----switchyard-free";
  const res = await postEdit(
    key,
    multipart(boundary, [["model", "free-image-test"], ["prompt", "x"], ["image", PNG, "a.png"]]),
    boundary,
  );
  assert.equal(res.status, 200, await res.clone().text());
  assert.equal((await res.json()).data.length, 1);
  assert.equal((await usageOf(gateway, key)).spent_nanousd, 0);
});

Deno.test("a key without balance is refused for a priced model", async () => {
  const { key } = await gateway.createKey("img-no-balance");
  const boundary = "----switchyard-nobalance";
  const body = multipart(boundary, [
    ["image", new Uint8Array(150_000), "big.png"],
    ["prompt", "x"],
    ["model", "image-test"],
  ]);
  const res = await postEdit(key, chunked(body), boundary);
  assert.equal(res.status, 402);
  assert.equal((await res.json()).error.code, "insufficient_balance");
});

Deno.test("uploads past the limit get 413, declared or discovered while streaming, and cost nothing", async () => {
  const { key } = await client("img-too-large");
  const boundary = "----switchyard-limit";
  const body = multipart(boundary, [
    ["model", "image-test"],
    ["prompt", "too big"],
    ["image", new Uint8Array(LIMIT + 10_000), "huge.png"],
  ]);
  for (const sent of [body, chunked(body)]) {
    const res = await postEdit(key, sent, boundary);
    assert.equal(res.status, 413);
    const { error } = await res.json();
    assert.match(error.message, /larger than the limit of 200000 bytes/);
  }
  const usage = await usageOf(gateway, key);
  assert.equal(usage.spent_nanousd, 0);
  assert.equal(usage.held_nanousd, 0);
});

Deno.test("JSON edits (images[] by URL) are passed through and billed per image", async () => {
  const { key } = await client("img-edit-json");
  const post = (body: unknown) =>
    fetch(`${gateway.url}/v1/images/edits`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  const res = await post({
    model: "image-test",
    prompt: "Combine",
    images: [{ image_url: "https://example.com/a.png" }, { file_id: "file-1" }],
    n: 2,
    quality: "low",
  });
  assert.equal(res.status, 200);
  assert.equal((await res.json()).data.length, 2);
  const seen = (await stack.upstreamRequests()).at(-1)!;
  assert.equal(seen.path, "/openai/v1/images/edits");
  assert.equal((seen.body as { model: string }).model, "gpt-image-1");
  const missing = await post({ model: "image-test", prompt: "x", images: [] });
  assert.equal(missing.status, 400);
  assert.equal((await missing.json()).error.param, "images");
  assert.equal((await usageOf(gateway, key)).spent_nanousd, 2 * 11_000_000);
});

Deno.test("image errors: no model, wrong kind of model, upstream validation relayed", async () => {
  const { key, openai } = await client("img-errors");
  const boundary = "----switchyard-errors";
  const noBoundary = await fetch(`${gateway.url}/v1/images/edits`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "multipart/form-data" },
    body: "x",
  });
  assert.equal(noBoundary.status, 400);
  assert.match((await noBoundary.json()).error.message, /boundary/);
  const noModel = await postEdit(key, multipart(boundary, [["prompt", "x"]]), boundary);
  assert.equal(noModel.status, 400);
  assert.equal((await noModel.json()).error.param, "model");
  await assert.rejects(
    openai.images.generate({ model: "gpt-test", prompt: "x" }),
    (e: InstanceType<typeof OpenAI.APIError>) =>
      e.status === 400 && e.code === "model_not_supported",
  );
  await assert.rejects(
    openai.images.generate({ model: "image-test", prompt: "x", n: 11 }),
    (e: InstanceType<typeof OpenAI.APIError>) => e.status === 400 && e.param === "n",
  );
  const noImage = await postEdit(
    key,
    multipart(boundary, [["model", "image-test"], ["prompt", "x"]]),
    boundary,
  );
  assert.equal(noImage.status, 400);
  assert.match((await noImage.json()).error.message, /image/);
  assert.equal((await usageOf(gateway, key)).spent_nanousd, 0);
});
