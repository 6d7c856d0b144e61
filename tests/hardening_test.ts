/**
 * Hardening against a careful adversary: crafted input is a 400 in the route's format (never a
 * 500), time is bounded on both sides of the gateway, log lines stay small, upstream state stays
 * with the account that created it, upstream errors do not leak the operator, and a cut stream
 * reaches the client as an error in its protocol.
 */
import assert from "node:assert/strict";
import { eventually, MAX_OUT, startStack, TEST_PRICE, usageOf } from "./helpers/setup.ts";
import { anthropic, bearer, goog, post as httpPost, readBody } from "./helpers/http.ts";
import { ledgerOf } from "./helpers/store.ts";

const stack = await startStack({
  server: {
    maxBodyBytes: 4 * 1024 * 1024,
    upstreamTimeoutMs: 1500,
    uploadTimeoutMs: 4500,
    // Limits every stream of this file runs under: far past any pause a loaded machine makes
    // between two events, and each tested below against a stream well past it.
    streamIdleTimeoutMs: 2000,
    streamMaxMs: 6000,
    // The 408 test leaves a client that never finishes its upload: shutdown exits past the drain.
    drainTimeoutMs: 200,
  },
  providers: {
    "openai-badkey": { type: "openai", baseUrl: "/openai/v1", apiKey: "sk-operator-secret-9876" },
    "gemini-badkey": { type: "gemini", baseUrl: "/gemini", apiKey: "AIzaOperatorSecret12345" },
    "xai-badkey": { type: "xai", baseUrl: "/xai/v1", apiKey: "xai-operator-secret-5555" },
  },
  models: {
    "alias-missing": {
      provider: "openai",
      upstream: "retired-model-x",
      ...MAX_OUT,
      price: TEST_PRICE,
    },
    "bad-openai": { provider: "openai-badkey", upstream: "gpt-5.4", ...MAX_OUT, price: TEST_PRICE },
    "bad-gemini": {
      provider: "gemini-badkey",
      upstream: "gemini-2.5-flash",
      ...MAX_OUT,
      price: TEST_PRICE,
    },
    "bad-xai": { provider: "xai-badkey", upstream: "grok-4", ...MAX_OUT, price: TEST_PRICE },
  },
});
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

const post = (path: string, headers: Record<string, string>, body: unknown) =>
  httpPost(gateway.url, path, headers, body);

/** Asserts a 400 in the route's own error format, naming `param` (OpenAI, Google) when given. */
async function assert400(res: Response, format: "openai" | "anthropic" | "google", param?: RegExp) {
  assert.equal(res.status, 400, await res.clone().text());
  const body = await res.json();
  if (format === "openai") {
    assert.equal(body.error.type, "invalid_request_error");
    if (param) assert.match(String(body.error.param), param);
  } else if (format === "anthropic") {
    assert.equal(body.type, "error");
    assert.equal(body.error.type, "invalid_request_error");
    if (param) assert.match(body.error.message, param);
  } else {
    assert.equal(body.error.status, "INVALID_ARGUMENT");
    if (param) assert.match(body.error.message, param);
  }
}

Deno.test("huge output caps, deep nesting, bad escapes and prototype keys are 400s", async () => {
  const { key } = await gateway.createKey("crafted", "--credit", "5");
  await assert400(
    await post("/v1/responses", bearer(key), {
      model: "gpt-test",
      input: "x",
      max_output_tokens: 1e308,
    }),
    "openai",
    /max_output_tokens/,
  );
  await assert400(
    await post("/v1/chat/completions", bearer(key), {
      model: "gpt-test",
      messages: [{ role: "user", content: "x" }],
      max_completion_tokens: 1e308,
    }),
    "openai",
    /max_completion_tokens/,
  );
  await assert400(
    await post("/v1/messages", anthropic(key), {
      model: "claude-test",
      max_tokens: 1e308,
      messages: [{ role: "user", content: "x" }],
    }),
    "anthropic",
    /max_tokens/,
  );
  await assert400(
    await post("/v1beta/models/gemini-test:generateContent", goog(key), {
      contents: [{ role: "user", parts: [{ text: "x" }] }],
      generationConfig: { maxOutputTokens: 1e308 },
    }),
    "google",
    /maxOutputTokens/,
  );
  const deep = (levels: number) => "[".repeat(levels) + "]".repeat(levels);
  for (const levels of [10_000, 200_000]) {
    await assert400(
      await post("/v1/responses", bearer(key), `{"model":"gpt-test","input":${deep(levels)}}`),
      "openai",
      /^input/,
    );
    await assert400(
      await post(
        "/v1/responses",
        bearer(key),
        `{"model":"gpt-test","input":"x","tools":[${deep(levels)}]}`,
      ),
      "openai",
      /^tools/,
    );
  }
  for (const field of ["responseModalities", "imageConfig"]) {
    const nested = field === "imageConfig" ? `{"a":${deep(10_000)}}` : deep(10_000);
    await assert400(
      await post(
        "/v1beta/models/gemini-3-pro-image-test:generateContent",
        goog(key),
        `{"contents":[{"parts":[{"text":"x"}]}],"generationConfig":{"${field}":${nested}}}`,
      ),
      "google",
      new RegExp(field),
    );
  }
  // A value whose own toString is not a function (the fuzz test found `String(value)` throwing).
  await assert400(
    await post("/v1beta/models/gemini-3-pro-image-test:generateContent", goog(key), {
      contents: [{ parts: [{ text: "x" }] }],
      generationConfig: {
        responseModalities: ["TEXT", { toString: "x" }],
        imageConfig: { aspectRatio: { toString: null } },
      },
    }),
    "google",
    /responseModalities/,
  );
  await assert400(
    await post("/v1beta/models/%:generateContent", goog(key), {
      contents: [{ parts: [{ text: "x" }] }],
    }),
    "google",
    /percent-encoded/,
  );
  for (const size of ["constructor", "__proto__", "toString"]) {
    const res = await post("/v1/images/generations", bearer(key), {
      model: "image-test",
      prompt: "x",
      size,
      quality: size,
    });
    assert.notEqual(res.status, 500, size);
    assert.ok(res.status < 500, `${size}: ${res.status}`);
    await res.body?.cancel();
  }
  const longModel = await post("/v1/responses", bearer(key), {
    model: "m".repeat(5000),
    input: "x",
  });
  await assert400(longModel, "openai", /^model$/);
  const longId = await fetch(`${gateway.url}/v1/usage`, {
    headers: { ...bearer(key), "x-request-id": "r".repeat(500) },
  });
  await assert400(longId, "openai", /x-request-id/);
  assert.equal((await usageOf(gateway, key)).spent_nanousd, 0);
});

Deno.test("a slow upload is not an upstream timeout; a body that never finishes is a 408", async () => {
  const { key } = await gateway.createKey("slow-upload", "--credit", "5");
  const boundary = "----slow";
  const enc = new TextEncoder();
  const head = enc.encode(
    `--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nimage-test\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="prompt"\r\n\r\nslowly\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="a.png"\r\n` +
      `Content-Type: image/png\r\n\r\n`,
  );
  const tail = enc.encode(`\r\n--${boundary}--\r\n`);
  // 200 KB over about 2 s, longer than upstreamTimeoutMs (1.5 s), within uploadTimeoutMs (4.5 s).
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (sent === 0) controller.enqueue(head);
      if (sent >= 20) {
        controller.enqueue(tail);
        return controller.close();
      }
      await new Promise((r) => setTimeout(r, 100));
      controller.enqueue(new Uint8Array(10_000).fill(9));
      sent++;
    },
  });
  const res = await fetch(`${gateway.url}/v1/images/edits`, {
    method: "POST",
    headers: { ...bearer(key), "content-type": `multipart/form-data; boundary=${boundary}` },
    body,
    // @ts-ignore: Deno's fetch takes duplex for streamed bodies
    duplex: "half",
  });
  assert.equal(res.status, 200, await res.clone().text());
  assert.equal((await res.json()).data.length, 1);
  // A JSON body that stops arriving: 408 once uploadTimeoutMs has passed.
  const stalled = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(enc.encode('{"model":"gpt-test","input":"'));
    },
  });
  const started = Date.now();
  const timedOut = await fetch(`${gateway.url}/v1/responses`, {
    method: "POST",
    headers: { ...bearer(key), "content-type": "application/json" },
    body: stalled,
    // @ts-ignore: Deno's fetch takes duplex for streamed bodies
    duplex: "half",
  });
  assert.equal(timedOut.status, 408);
  assert.equal((await timedOut.json()).error.code, "request_timeout");
  // Not before the deadline; the upper bound only tells it from a hang.
  const took = Date.now() - started;
  assert.ok(took >= 4400 && took < 20_000, `408 after ${took} ms`);
});

Deno.test("a stream that stalls between events, or runs too long, is cut: billed for what was relayed, free when nothing was", async () => {
  const { key } = await gateway.createKey("stalled", "--credit", "5");
  const cases: [string, string, number][] = [
    // 8 s before each event against a 2 s idle limit: cut before the first.
    ["idle", "stall [[emulate words=40 delay=8000]]", 7000],
    // 50 ms between events over 400 events (20 s): past the 6 s total limit.
    ["total", "long [[emulate words=400 delay=50]]", 15_000],
  ];
  for (const [name, input, within] of cases) {
    const started = Date.now();
    const res = await post("/v1/responses", bearer(key), {
      model: "gpt-test",
      input,
      stream: true,
    });
    const text = await res.text();
    assert.ok(Date.now() - started < within, `${name}: cut after ${Date.now() - started} ms`);
    assert.match(text, /event: error\ndata: .*ended the stream unexpectedly/, name);
    assert.doesNotMatch(text, /response\.completed/, name);
  }
  // The idle case is cut before its first event (nothing reached the client: it is told the call
  // failed, and pays nothing); the long one after many, billed on what was relayed.
  await eventually(async () => {
    const usage = await usageOf(gateway, key);
    return usage.requests === 1 && usage.held_nanousd === 0;
  });
  const rows = (await ledgerOf(gateway, { account: "stalled" })).filter((e) => e.kind === "charge");
  assert.deepEqual(rows.map((r) => [r.status, r.estimated]), [["settled", true]]);
  assert.ok(Number(rows[0].amount) > 0);
});

Deno.test("log lines stay small whatever the path or model id", async () => {
  const { key } = await gateway.createKey("log-size", "--credit", "5");
  const longPath = await fetch(`${gateway.url}/${"p".repeat(60_000)}`);
  assert.equal(longPath.status, 404);
  await longPath.body?.cancel();
  const longModel = await post("/v1/responses", bearer(key), {
    model: "w".repeat(1024 * 1024),
    input: "x",
  });
  assert.equal(longModel.status, 400);
  await longModel.body?.cancel();
  const logged = () => gateway.logs.filter((l) => l.includes("ppppp") || l.includes("wwwww"));
  await eventually(() => logged().length >= 2, { what: "both requests' log lines" });
  const lines = logged();
  assert.equal(lines.length, 2);
  for (const line of lines) {
    assert.ok(line.length < 1500, `a log line of ${line.length} bytes`);
    assert.match(line, /truncated \d+ chars/);
  }
});

Deno.test("upstream state stays with the account that created it", async () => {
  const { key: owner } = await gateway.createKey("state-owner", "--credit", "5");
  const { key: other } = await gateway.createKey("state-other", "--credit", "5");
  const first = await (await post("/v1/responses", bearer(owner), {
    model: "gpt-test",
    input: "my secret is 42",
  })).json();
  const streamed = await (await post("/v1/responses", bearer(owner), {
    model: "gpt-test",
    input: "and streamed",
    stream: true,
  })).text();
  const streamedId = JSON.parse(/event: response\.created\ndata: (.*)/.exec(streamed)![1]).response
    .id;
  for (const id of [first.id, streamedId]) {
    const own = await post("/v1/responses", bearer(owner), {
      model: "gpt-test",
      input: "what was it?",
      previous_response_id: id,
    });
    assert.equal(own.status, 200, await own.clone().text());
    await own.body?.cancel();
    const theirs = await post("/v1/responses", bearer(other), {
      model: "gpt-test",
      input: "what was it?",
      previous_response_id: id,
    });
    assert.equal(theirs.status, 404);
    const { error } = await theirs.json();
    assert.equal(error.param, "previous_response_id");
    assert.match(error.message, /not found/);
  }
  // Compaction and token counting would read or size the other account's conversation.
  for (const path of ["/v1/responses/compact", "/v1/responses/input_tokens"]) {
    const reached = await post(path, bearer(other), {
      model: "gpt-test",
      input: "x",
      previous_response_id: first.id,
    });
    assert.equal(reached.status, 404, path);
    assert.equal((await reached.json()).error.param, "previous_response_id", path);
  }
  // A response stored nowhere cannot be continued, here as upstream (and is not recorded).
  const unstored = await (await post("/v1/responses", bearer(owner), {
    model: "gpt-test",
    input: "x",
    store: false,
  })).json();
  const continued = await post("/v1/responses", bearer(owner), {
    model: "gpt-test",
    input: "x",
    previous_response_id: unstored.id,
  });
  assert.equal(continued.status, 404);
  await continued.body?.cancel();
  const unknown = await post("/v1/responses", bearer(other), {
    model: "gpt-test",
    input: "x",
    previous_response_id: "resp_never_seen",
  });
  assert.equal(unknown.status, 404);
  await unknown.body?.cancel();
  const conversation = await post("/v1/responses", bearer(other), {
    model: "gpt-test",
    input: "x",
    conversation: "conv_someone_elses",
  });
  assert.equal(conversation.status, 404);
  assert.equal((await conversation.json()).error.param, "conversation");
  const cached = await post("/v1beta/models/gemini-test:generateContent", goog(other), {
    contents: [{ parts: [{ text: "x" }] }],
    cachedContent: "cachedContents/abc",
  });
  assert.equal(cached.status, 404);
  assert.equal((await cached.json()).error.status, "NOT_FOUND");
  for (const container of ["container_someone_elses", { id: "container_someone_elses" }]) {
    const res = await post("/v1/messages", anthropic(other), {
      model: "claude-test",
      max_tokens: 16,
      container,
      messages: [{ role: "user", content: "x" }],
    });
    assert.equal(res.status, 404);
    assert.equal((await res.json()).error.type, "not_found_error");
  }
  // Nothing the other account tried was billed.
  assert.equal((await usageOf(gateway, other)).requests, 0);
});

Deno.test("upstream errors name neither the operator nor the upstream model; key failures are 502", async () => {
  const { key } = await gateway.createKey("redaction", "--credit", "5");
  const missing = await post("/v1/responses", bearer(key), { model: "alias-missing", input: "x" });
  assert.equal(missing.status, 404);
  const { error } = await missing.json();
  assert.equal(
    error.message,
    "The model `alias-missing` does not exist or you do not have access to it.",
  );
  const calls: [string, Record<string, string>, unknown][] = [
    ["/v1/responses", bearer(key), { model: "bad-openai", input: "x" }],
    ["/v1/responses", bearer(key), { model: "bad-xai", input: "x" }],
    ["/v1beta/models/bad-gemini:generateContent", goog(key), {
      contents: [{ parts: [{ text: "x" }] }],
    }],
  ];
  for (const [path, headers, body] of calls) {
    const res = await post(path, headers, body);
    assert.equal(res.status, 502, path);
    const text = await res.text();
    assert.match(text, /refused the gateway's credentials/);
    for (
      const secret of [
        "operator-secret",
        "Operator",
        "API_KEY_INVALID",
        "Incorrect API key",
        "sk-",
        "xai-",
        "AIza",
      ]
    ) {
      assert.ok(!text.includes(secret), `${path}: ${text}`);
    }
  }
  await eventually(() =>
    Promise.resolve(
      gateway.errors.filter((l) => l.includes("refused the gateway's credentials")).length === 3,
    )
  );
  const logged = gateway.errors.filter((l) => l.includes("refused the gateway's credentials"));
  assert.ok(logged.some((l) => l.includes("API_KEY_INVALID")), "the server log has the details");
  assert.ok(logged.every((l) => !l.includes("operator-secret")), "but never the key");
  assert.equal((await usageOf(gateway, key)).requests, 0);
  // An error event inside a stream is redacted as an error response is.
  const streamed = await (await post("/v1/responses", bearer(key), {
    model: "gpt-test",
    input: "go [[emulate words=50 stream_error=5]]",
    stream: true,
  })).text();
  // (Ordinary events carry the upstream's own model field, as a direct answer would.)
  const inStream = /event: error\ndata: (.*rate_limit_exceeded.*)/.exec(streamed)![1];
  assert.match(inStream, /Rate limit reached for gpt-test in organization org-\[redacted\]/);
  assert.doesNotMatch(inStream, /EmuLat3d|gpt-5\.4/);
});

Deno.test("a JSON answer that stops after its headers is cut like a stalled stream", async () => {
  const { key } = await gateway.createKey("stalled-json", "--credit", "5");
  const started = Date.now();
  const res = await post("/v1/responses", bearer(key), {
    model: "gpt-test",
    input: "pause [[emulate stall=10000]]",
  });
  assert.equal(res.status, 504);
  assert.match((await res.json()).error.message, /stopped sending its answer/);
  // Cut at the 2 s idle limit, not when the upstream would have gone on (10 s).
  assert.ok(Date.now() - started < 8000, `cut after ${Date.now() - started} ms`);
  await eventually(async () => (await usageOf(gateway, key)).held_nanousd === 0);
});

Deno.test("multipart: a priced field may not be a file part, and text fields are bounded", async () => {
  const { key } = await gateway.createKey("form-limits", "--credit", "5");
  const boundary = "----limits";
  const part = (name: string, value: string, filename?: string) =>
    `--${boundary}\r\nContent-Disposition: form-data; name="${name}"${
      filename ? `; filename="${filename}"` : ""
    }\r\n\r\n${value}\r\n`;
  const send = (body: string) =>
    fetch(`${gateway.url}/v1/images/edits`, {
      method: "POST",
      headers: { ...bearer(key), "content-type": `multipart/form-data; boundary=${boundary}` },
      body: body + `--${boundary}--\r\n`,
    });
  const asFile = await send(
    part("model", "image-test") + part("image", "png", "a.png") + part("prompt", "x") +
      part("n", "10", "n.txt"),
  );
  assert.equal(asFile.status, 400);
  assert.equal((await asFile.json()).error.param, "n");
  const bigText = await send(
    part("model", "image-test") + part("image", "png", "a.png") +
      Array.from({ length: 8 }, (_, i) => part(`extra${i}`, "t".repeat(200_000))).join(""),
  );
  assert.equal(bigText.status, 400);
  assert.match((await bigText.json()).error.message, /text fields are larger/);
  assert.equal((await usageOf(gateway, key)).spent_nanousd, 0);
});

/** One stream per protocol and framing, cut by the upstream (an error) or stopped early (a clean close). */
const CUTS: [
  string,
  string,
  (key: string) => Record<string, string>,
  (prompt: string) => unknown,
  (text: string) => void,
][] = [
  [
    "Responses",
    "/v1/responses",
    bearer,
    (prompt) => ({ model: "gpt-test", input: prompt, stream: true }),
    (text) => assert.match(text, /event: error\ndata: \{"type":"error","code":"upstream_error"/),
  ],
  [
    "Messages",
    "/v1/messages",
    anthropic,
    (prompt) => ({
      model: "claude-test",
      max_tokens: 512,
      stream: true,
      messages: [{ role: "user", content: prompt }],
    }),
    (text) =>
      assert.match(text, /event: error\ndata: \{"type":"error","error":\{"type":"api_error"/),
  ],
  [
    "chat",
    "/v1/chat/completions",
    bearer,
    (prompt) => ({
      model: "gpt-test",
      stream: true,
      messages: [{ role: "user", content: prompt }],
    }),
    (text) => {
      assert.match(text, /data: \{"error":\{"message":"The upstream provider ended/);
      assert.doesNotMatch(text, /\[DONE\]/);
    },
  ],
  [
    "generateContent SSE",
    "/v1beta/models/gemini-test:streamGenerateContent?alt=sse",
    goog,
    (prompt) => ({ contents: [{ parts: [{ text: prompt }] }] }),
    (text) => assert.match(text, /data: \{"error":\{"code":502/),
  ],
  [
    "generateContent JSON array",
    "/v1beta/models/gemini-test:streamGenerateContent",
    goog,
    (prompt) => ({ contents: [{ parts: [{ text: prompt }] }] }),
    (text) => {
      const elements = JSON.parse(text);
      assert.ok(Array.isArray(elements) && elements.length >= 1);
      assert.equal(elements.at(-1).error.code, 502);
    },
  ],
];

for (const [name, path, auth, body, check] of CUTS) {
  Deno.test(`${name}: a stream the upstream cuts or stops early ends in the protocol's error`, async () => {
    const { key } = await gateway.createKey(`cut-${name.replace(/\W+/g, "-")}`, "--credit", "5");
    // Past the first text events: a cut after output is billed for what was relayed.
    for (const fault of ["cut=12", "stop=12"]) {
      const res = await post(path, auth(key), body(`words [[emulate words=60 ${fault}]]`));
      assert.equal(res.status, 200);
      const { text, failed } = await readBody(res);
      check(text);
      // generateContent's body then fails, so that no client takes its end for a success.
      assert.equal(failed, path.startsWith("/v1beta/"), `${fault}: how the body ended`);
    }
    await eventually(async () => (await usageOf(gateway, key)).requests === 2);
    assert.equal((await usageOf(gateway, key)).held_nanousd, 0);
  });
}
