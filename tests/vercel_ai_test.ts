/**
 * The Vercel AI SDK (`ai`, with `@ai-sdk/openai`'s Responses model) through the gateway: its tool
 * loop — `generateText` and `streamText` with a tool it runs and a multi-step stop condition —
 * completes on thinking models the gateway translates (Claude on Messages, Gemini on
 * generateContent) as on the native OpenAI model. With `store: true` (the SDK's default) it sends
 * the earlier reasoning and messages back as `item_reference`s; with `store: false` whole, with
 * their `encrypted_content`. Each step is one upstream call and one charge, none estimated, and
 * the charges add up to the SDK's total usage at the test price, to the nanodollar.
 */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { createOpenAI, generateText, jsonSchema, stepCountIs, streamText, tool } from "./deps.ts";
import { eventually, MAX_OUT, startStack, TEST_PRICE } from "./helpers/setup.ts";
import { booksOf } from "./helpers/store.ts";

const stack = await startStack({
  // A native OpenAI model under an id the SDK knows for a reasoning model: it asks for reasoning
  // (and with `store: false` its encrypted content) without being told to.
  models: {
    "gpt-5.4": { provider: "openai", upstream: "gpt-5.4", price: TEST_PRICE, ...MAX_OUT },
  },
});
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

/** nanoUSD per token at the test price. */
const RATE = {
  input: TEST_PRICE.input * 1000,
  cached: TEST_PRICE.cachedInput * 1000,
  output: TEST_PRICE.output * 1000,
};

/** What the SDK reports of a step's or a run's tokens, priced at the test price. */
function priced(usage: any): number {
  const cached = usage.inputTokenDetails?.cacheReadTokens ?? 0;
  return (usage.inputTokens - cached) * RATE.input + cached * RATE.cached +
    usage.outputTokens * RATE.output;
}

/** The tool the model is steered to call, and what it returns. */
const PROMPT = "[[emulate tool=get_weather arg.city=Paris]] What is the weather in Paris?";
const WEATHER = "18C and cloudy in Paris";

const tools = {
  get_weather: tool({
    description: "The weather in a city.",
    inputSchema: jsonSchema<{ city: string }>({
      type: "object",
      properties: { city: { type: "string", description: "The city." } },
      required: ["city"],
      additionalProperties: false,
    }),
    execute: ({ city }) => Promise.resolve(city === "Paris" ? WEATHER : "unknown"),
  }),
};

interface Family {
  model: string;
  /** The upstream path its calls go to (a stream's, when streamed). */
  path(stream: boolean): RegExp;
  /** The reasoning of the first answer went up in the second call, as the provider gave it. */
  replayed(body: any, store: boolean): void;
  /** The SDK does not know the id for a reasoning model, so it is told (`forceReasoning`). */
  force: boolean;
}

const FAMILIES: Family[] = [
  {
    model: "claude-test",
    path: () => /^\/anthropic\/v1\/messages$/,
    replayed(body) {
      assert.equal(body.thinking?.type, "enabled");
      const [thinking, use] = body.messages[1].content;
      assert.equal(thinking.type, "thinking");
      assert.ok(!thinking.signature.startsWith("swy1."), "Claude's own signature went up");
      assert.deepEqual([use.type, use.input], ["tool_use", { city: "Paris" }]);
    },
    force: true,
  },
  {
    model: "gemini-test",
    path: (stream) =>
      stream
        ? /^\/gemini\/v1beta\/models\/gemini-2\.5-flash:streamGenerateContent\?alt=sse$/
        : /^\/gemini\/v1beta\/models\/gemini-2\.5-flash:generateContent$/,
    replayed(body) {
      assert.equal(body.generationConfig.thinkingConfig.includeThoughts, true);
      const call = body.contents[1].parts.find((p: any) => p.functionCall);
      assert.deepEqual(call.functionCall.args, { city: "Paris" });
      assert.equal(typeof call.thoughtSignature, "string", "the thought signature went up");
    },
    force: true,
  },
  {
    model: "gpt-5.4",
    path: () => /^\/openai\/v1\/responses$/,
    replayed(body, store) {
      assert.equal(body.reasoning.effort, "low");
      const reasoning = body.input[1];
      // Passed through: by reference (the upstream holds it), or whole with its sealed state.
      if (store) assert.equal(reasoning.type, "item_reference");
      else assert.match(reasoning.encrypted_content, /^gAAAAB/);
    },
    force: false,
  },
];

/** What a run of the loop gave, read the same from `generateText` and `streamText`. */
interface Run {
  text: string;
  steps: any[];
  totalUsage: any;
  /** The request bodies the SDK sent, in order. */
  sent: any[];
}

async function run(family: Family, key: string, stream: boolean, store: boolean): Promise<Run> {
  const sent: any[] = [];
  const openai = createOpenAI({
    baseURL: `${gateway.url}/v1`,
    apiKey: key,
    fetch: (input, init) => {
      sent.push(JSON.parse(String(init?.body)));
      return fetch(input, init);
    },
  });
  const call = {
    model: openai.responses(family.model),
    prompt: PROMPT,
    tools,
    stopWhen: stepCountIs(4),
    // One attempt: a retry would be a call of its own.
    maxRetries: 0,
    providerOptions: {
      openai: {
        reasoningEffort: "low",
        reasoningSummary: "auto",
        ...(family.force ? { forceReasoning: true } : {}),
        ...(store ? {} : { store: false }),
      },
    },
  };
  if (!stream) {
    const result = await generateText(call);
    return { text: result.text, steps: result.steps, totalUsage: result.totalUsage, sent };
  }
  const result = streamText(call);
  const parts: string[] = [];
  for await (const part of result.fullStream) {
    if (part.type === "error") throw part.error;
    parts.push(part.type);
  }
  // The stream carried each step's reasoning, the call and its result, then the answer.
  const at = (type: string) => parts.indexOf(type);
  assert.ok(at("reasoning-delta") >= 0, parts.join(" "));
  assert.ok(at("reasoning-delta") < at("tool-call"), parts.join(" "));
  assert.ok(at("tool-call") < at("tool-result") && at("tool-result") < at("text-delta"));
  assert.equal(parts.filter((p) => p === "finish-step").length, 2);
  return {
    text: await result.text,
    steps: await result.steps,
    totalUsage: await result.totalUsage,
    sent,
  };
}

for (const family of FAMILIES) {
  for (const stream of [false, true]) {
    for (const store of [true, false]) {
      const how = `${stream ? "streamText" : "generateText"}${store ? "" : ", store: false"}`;
      Deno.test(`vercel ai ${how} on ${family.model}: the tool loop completes, every step billed as the SDK saw it`, async () => {
        const account = `vercel-${family.model}-${stream ? "stream" : "json"}-${store}`;
        const { key } = await gateway.createKey(account, "--credit", "5");
        const before = await stack.upstreamCount();

        const { text, steps, totalUsage, sent } = await run(family, key, stream, store);

        // The model called the tool, the SDK ran it, and the model answered from its result.
        assert.match(text, new RegExp(WEATHER));
        assert.equal(steps.length, 2);
        const [first, last] = steps;
        assert.equal(first.finishReason, "tool-calls");
        assert.deepEqual(
          first.toolCalls.map((c: any) => [c.toolName, c.input]),
          [["get_weather", { city: "Paris" }]],
        );
        assert.deepEqual(first.toolResults.map((r: any) => r.output), [WEATHER]);
        assert.equal(last.finishReason, "stop");
        assert.equal(last.toolCalls.length, 0);
        assert.ok(first.reasoning.length > 0, "the first step thought");

        // What the SDK sent for the second step: the first answer's reasoning by reference
        // (`store: true`, its default), or whole with its encrypted content (`store: false`).
        assert.equal(sent.length, 2);
        const input: any[] = sent[1].input;
        const types = input.map((i) => i.type ?? i.role).join(" ");
        if (store) {
          assert.ok(input.some((i) => i.type === "item_reference"), types);
          assert.ok(!input.some((i) => i.type === "reasoning"), types);
        } else {
          assert.ok(!input.some((i) => i.type === "item_reference"), types);
          assert.ok(input.some((i) => i.type === "reasoning" && i.encrypted_content), types);
        }
        // Nothing the SDK warned of, but the summary Gemini's thinking gives beside its signed
        // part (no state of its own, so no encrypted content): with `store: false` the SDK sends
        // it no more, and nothing upstream needs it.
        const warnings = steps.flatMap((s) => s.warnings ?? []).filter((w: any) =>
          !(family.model === "gemini-test" && !store &&
            /Reasoning parts without encrypted content/.test(w.message))
        );
        assert.deepEqual(warnings, []);

        // Two upstream calls, the second carrying the first answer's reasoning as it came.
        const upstream = await stack.upstreamSince(before);
        assert.equal(upstream.length, 2, upstream.map((r) => r.path).join(" "));
        for (const request of upstream) {
          assert.match(request.path, family.path(stream));
          const streamed = request.path.includes("stream") || (request.body as any).stream === true;
          assert.equal(streamed, stream, request.path);
        }
        family.replayed(upstream[1].body, store);

        // One charge per call, settled from the usage the upstream reported, each the step's.
        await eventually(async () => (await booksOf({ dir: gateway.dir }, account)).settled === 2);
        const books = await booksOf({ dir: gateway.dir }, account);
        const charges = books.entries.filter((e) => e.kind === "charge").reverse();
        assert.equal(books.open, 0);
        assert.deepEqual(charges.map((c) => c.estimated), [false, false]);
        for (const [i, step] of steps.entries()) {
          const charge = charges[i];
          assert.equal(charge.model, family.model);
          assert.equal(charge.requestId, step.response.headers["x-request-id"], `step ${i}`);
          assert.ok(step.usage.inputTokens > 0 && step.usage.outputTokens > 0, `step ${i}`);
          assert.equal(
            step.usage.totalTokens,
            step.usage.inputTokens + step.usage.outputTokens,
          );
          const units = Object.fromEntries(charge.units.map((u) => [u.unit, u.quantity]));
          assert.deepEqual(units, {
            input_tokens: step.usage.inputTokens,
            output_tokens: step.usage.outputTokens,
          }, `step ${i}`);
          assert.equal(Number(charge.amount), priced(step.usage), `step ${i}`);
        }
        // The run's total is the steps' sum, and the books hold exactly that.
        assert.equal(totalUsage.inputTokens, first.usage.inputTokens + last.usage.inputTokens);
        assert.equal(totalUsage.outputTokens, first.usage.outputTokens + last.usage.outputTokens);
        assert.equal(books.charged, priced(totalUsage));
        assert.equal(books.spent, books.charged);
      });
    }
  }
}
