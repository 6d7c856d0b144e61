/**
 * Demo mode (`serve --emulate`): no upstream keys, no config; the built-in emulator answers for
 * every built-in provider, so every route family works out of the box and is billed. An empty
 * store's first start says how to create a key.
 */
import assert from "node:assert/strict";
import { startGateway } from "./helpers/gateway.ts";
import { eventually, usageOf } from "./helpers/setup.ts";
import { OpenAI } from "./deps.ts";

// No config file, no provider keys in the environment (the harness passes a clean one).
const ADMIN = "demo-admin-token-0123456789";
const gateway = await startGateway({ args: ["--emulate"], env: { SWITCHYARD_ADMIN_TOKEN: ADMIN } });
Deno.test.afterAll(() => gateway.stop());

Deno.test("demo mode says so, and an empty store's first start says how to create a key", () => {
  const lines = gateway.logs.map((l) => JSON.parse(l));
  const demo = lines.find((l) => l.msg.startsWith("demo mode"));
  assert.ok(demo, "the demo line");
  assert.match(demo.emulator, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.ok(lines.some((l) => l.msg.startsWith("no keys yet: create one with")));
  assert.ok(!lines.some((l) => /provider \w+ disabled/.test(l.msg)), "every provider is on");
});

Deno.test("every route family answers with no upstream key, and is billed", async () => {
  const { key } = await gateway.createKey("demo", "--credit", "10", "--rpm", "0");
  const call = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${gateway.url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    assert.equal(res.status, 200, `${path}: ${text.slice(0, 300)}`);
    return text;
  };
  const input = "Hello from demo mode";
  await call("/v1/responses", { model: "gpt-5.4", input });
  await call("/v1/responses", { model: "gpt-5.4", input, stream: true });
  await call("/v1/chat/completions", {
    model: "gpt-5.4",
    messages: [{ role: "user", content: input }],
  });
  await call("/v1/messages", {
    model: "claude-sonnet-4-5",
    max_tokens: 64,
    messages: [{ role: "user", content: input }],
  }, { "x-api-key": key, "anthropic-version": "2023-06-01" });
  await call("/v1beta/models/gemini-2.5-flash:generateContent", {
    contents: [{ role: "user", parts: [{ text: input }] }],
  }, { "x-goog-api-key": key });
  await call("/v1/messages", {
    model: "gemini-2.5-flash",
    max_tokens: 64,
    messages: [{ role: "user", content: "translated" }],
  }, { "x-api-key": key, "anthropic-version": "2023-06-01" });
  await call("/v1/embeddings", { model: "text-embedding-3-small", input });
  await call("/v1/images/generations", { model: "gpt-image-1", prompt: "a switchyard" });
  await call("/v1/responses/compact", { model: "gpt-5.4", input });
  await call("/v1/responses/input_tokens", { model: "gpt-5.4", input });
  await call("/v1/alpha/search", { id: "demo-search", model: "gpt-5.4", input: "news" });
  const video = JSON.parse(
    await call("/v1/videos/generations", {
      model: "grok-imagine-video",
      prompt: "[[emulate ready=100]] trains",
      duration: 1,
      resolution: "480p",
    }),
  );
  assert.equal(typeof video.request_id, "string");
  const models = await fetch(`${gateway.url}/v1/models`, {
    headers: { authorization: `Bearer ${key}` },
  });
  assert.ok((await models.json()).data.length > 10);
  // Eleven billed calls (counting is free), the video once it is done.
  await eventually(async () => (await usageOf(gateway, key)).requests === 11, 8000).catch(
    async (e) => {
      console.log(JSON.stringify(await usageOf(gateway, key)));
      throw e;
    },
  );
  const usage = await usageOf(gateway, key);
  assert.ok(usage.spent_nanousd > 0);
  assert.equal(usage.held_nanousd, 0);
});

Deno.test("the walk-through: a key, models listed and a call made with the OpenAI SDK, seen in the admin API and /metrics", async () => {
  const { key } = await gateway.createKey("walkthrough", "--credit", "5");
  const client = new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 });
  const ids: string[] = [];
  for await (const model of client.models.list()) ids.push(model.id);
  assert.ok(ids.includes("gpt-5.4") && ids.includes("claude-sonnet-4-5"), ids.join(", "));
  const answer = await client.responses.create({ model: "gpt-5.4", input: "Hello" });
  assert.ok(answer.output_text.length > 0);

  const admin = { authorization: `Bearer ${ADMIN}` };
  const page = await fetch(`${gateway.url}/admin`);
  assert.equal(page.status, 200);
  assert.match(await page.text(), /<html/i);
  const ledger = await (await fetch(`${gateway.url}/admin/api/ledger?account=walkthrough`, {
    headers: admin,
  })).json();
  const charge = ledger.data.find((e: { kind: string }) => e.kind === "charge");
  assert.equal(charge.model, "gpt-5.4");
  const usage = await usageOf(gateway, key);
  assert.equal(charge.amount_nanousd, usage.spent_nanousd);
  const metrics = await (await fetch(`${gateway.url}/metrics`, { headers: admin })).text();
  assert.match(
    metrics,
    /^switchyard_spend_nanousd_total\{model="gpt-5\.4",account="walkthrough"\} (\d+)$/m,
  );
  const spent = Number(
    /switchyard_spend_nanousd_total\{model="gpt-5\.4",account="walkthrough"\} (\d+)/.exec(
      metrics,
    )![1],
  );
  assert.equal(spent, usage.spent_nanousd);
});
