/**
 * Demo mode (`serve --emulate`): no upstream keys, no config; the built-in emulator answers for
 * every built-in provider, so every route family works out of the box and is billed. An empty
 * store's first start says how to create a key.
 */
import assert from "node:assert/strict";
import { runCli, startGateway } from "./helpers/gateway.ts";
import { eventually, usageOf } from "./helpers/setup.ts";
import { OpenAI } from "./deps.ts";

// No config file, no provider keys in the environment (the harness passes a clean one).
const ADMIN = "demo-admin-token-0123456789";
// Two serving threads, as `deno task start` runs on a multi-core machine: the threads reach the
// emulator too.
const gateway = await startGateway({
  args: ["--emulate"],
  workers: 2,
  env: { SWITCHYARD_ADMIN_TOKEN: ADMIN },
});
Deno.test.afterAll(() => gateway.stop());

Deno.test("demo mode says so, and an empty store's first start says how to create a key", () => {
  const lines = gateway.logs.map((l) => JSON.parse(l));
  const demo = lines.find((l) => l.msg.startsWith("demo mode"));
  assert.ok(demo, "the demo line");
  assert.match(demo.emulator, /^http:\/\/127\.0\.0\.1:\d+$/);
  // The exact command, ready to paste: this gateway runs from source, with no config file.
  const hint = lines.find((l) => l.msg.startsWith("no keys yet"));
  assert.equal(hint?.command, "deno run -A main.ts keys create --account demo --credit 10");
  assert.equal(hint.msg, `no keys yet: create one with \`${hint.command}\``);
  assert.ok(!lines.some((l) => /provider \w+ disabled/.test(l.msg)), "every provider is on");
});

/** The fields of an admin API ledger entry this test reads. */
interface Charge {
  kind: string;
  request_id: string;
  endpoint: string;
  model: string;
  provider: string;
  amount_nanousd: number;
  estimated: boolean;
  settled_at: string | null;
}

/** One call of the tour: its route, body and headers; `billed` unless the route is free. */
interface Visit {
  path: string;
  body: unknown | FormData;
  headers?: Record<string, string>;
  /** The provider the call must be charged to; absent for free routes (counting tokens). */
  billed?: string;
}

const MESSAGES = { "anthropic-version": "2023-06-01" };
const input = "Hello from demo mode";
const say = (model: string, extra: Record<string, unknown> = {}) => ({
  model,
  max_tokens: 64,
  messages: [{ role: "user", content: input }],
  ...extra,
});
const gemini = { contents: [{ role: "user", parts: [{ text: input }] }] };

/** Every route family of the default catalog, and every built-in provider at least once. */
function tour(): Visit[] {
  const edit = new FormData();
  edit.append("model", "gpt-image-1");
  edit.append("prompt", "add a signal box");
  edit.append("image", new Blob([new Uint8Array(64)], { type: "image/png" }), "yard.png");
  return [
    { path: "/v1/responses", body: { model: "gpt-5.4", input }, billed: "openai" },
    { path: "/v1/responses", body: { model: "gpt-5.4", input, stream: true }, billed: "openai" },
    { path: "/v1/responses", body: { model: "grok-4", input }, billed: "xai" },
    { path: "/v1/chat/completions", body: say("gpt-5.4"), billed: "openai" },
    { path: "/v1/chat/completions", body: say("kimi-k2.5", { stream: true }), billed: "moonshot" },
    {
      path: "/v1/messages",
      body: say("claude-sonnet-4-5"),
      headers: MESSAGES,
      billed: "anthropic",
    },
    {
      path: "/v1/messages",
      body: say("claude-sonnet-4-5", { stream: true }),
      headers: MESSAGES,
      billed: "anthropic",
    },
    { path: "/v1/messages", body: say("deepseek-v4-flash"), headers: MESSAGES, billed: "deepseek" },
    { path: "/v1/messages", body: say("glm-4.6"), headers: MESSAGES, billed: "zhipu" },
    // Translated: a Messages client on a Gemini model.
    { path: "/v1/messages", body: say("gemini-2.5-flash"), headers: MESSAGES, billed: "gemini" },
    { path: "/v1beta/models/gemini-2.5-flash:generateContent", body: gemini, billed: "gemini" },
    {
      path: "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
      body: gemini,
      billed: "gemini",
    },
    {
      path: "/v1beta/models/gemini-embedding-001:embedContent",
      body: { content: { parts: [{ text: input }] } },
      billed: "gemini",
    },
    { path: "/v1/embeddings", body: { model: "text-embedding-3-small", input }, billed: "openai" },
    {
      path: "/v1/images/generations",
      body: { model: "gpt-image-1", prompt: "a switchyard" },
      billed: "openai",
    },
    { path: "/v1/images/edits", body: edit, billed: "openai" },
    { path: "/v1/responses/compact", body: { model: "gpt-5.4", input }, billed: "openai" },
    {
      path: "/v1/alpha/search",
      body: { id: "demo-search", model: "gpt-5.4", input: "news" },
      billed: "openai",
    },
    {
      path: "/v1/videos/generations",
      body: {
        model: "grok-imagine-video",
        prompt: "[[emulate ready=100]] trains",
        duration: 1,
        resolution: "480p",
      },
      billed: "xai",
    },
    // Counting is free, and answered by the emulator (not the local estimate).
    { path: "/v1/responses/input_tokens", body: { model: "gpt-5.4", input } },
    { path: "/v1/messages/count_tokens", body: say("claude-sonnet-4-5"), headers: MESSAGES },
    { path: "/v1beta/models/gemini-2.5-flash:countTokens", body: gemini },
  ];
}

Deno.test("every route family answers with no upstream key, and is billed in the ledger", async () => {
  const { key } = await gateway.createKey("demo", "--credit", "10", "--rpm", "0");
  const auth = (path: string): Record<string, string> =>
    path.startsWith("/v1beta/")
      ? { "x-goog-api-key": key }
      : path.startsWith("/v1/messages")
      ? { "x-api-key": key }
      : { authorization: `Bearer ${key}` };
  const billed = new Map<string, string>();
  let video = "";
  for (const visit of tour()) {
    const form = visit.body instanceof FormData;
    const res = await fetch(`${gateway.url}${visit.path}`, {
      method: "POST",
      headers: {
        ...auth(visit.path),
        ...(form ? {} : { "content-type": "application/json" }),
        ...visit.headers,
      },
      body: form ? visit.body as FormData : JSON.stringify(visit.body),
    });
    const text = await res.text();
    assert.equal(res.status, 200, `${visit.path}: ${text.slice(0, 300)}`);
    if (visit.path === "/v1/videos/generations") video = JSON.parse(text).request_id;
    if (visit.billed) billed.set(res.headers.get("x-request-id")!, visit.billed);
    else assert.equal(res.headers.get("x-switchyard-token-count"), "upstream", visit.path);
  }
  const models = await fetch(`${gateway.url}/v1/models`, {
    headers: { authorization: `Bearer ${key}` },
  });
  assert.ok((await models.json()).data.length > 10);

  // Each billed call is one settled charge, to its provider, with the amount taken from the
  // upstream's report (the video once its job is done).
  const charges = async () => {
    const page = await (await fetch(`${gateway.url}/admin/api/ledger?account=demo&limit=500`, {
      headers: { authorization: `Bearer ${ADMIN}` },
    })).json();
    return (page.data as Charge[]).filter((e) => e.kind === "charge");
  };
  await eventually(async () => {
    const settled = (await charges()).filter((e) => e.settled_at !== null);
    return settled.length === billed.size;
  }).catch(async (e) => {
    console.log(JSON.stringify(await charges(), null, 1));
    throw e;
  });
  const job = await fetch(`${gateway.url}/v1/videos/${video}`, {
    headers: { authorization: `Bearer ${key}` },
  });
  assert.equal((await job.json()).status, "done");
  const entries = await charges();
  assert.equal(entries.length, billed.size);
  for (const entry of entries) {
    assert.equal(entry.provider, billed.get(entry.request_id), `${entry.endpoint} ${entry.model}`);
    assert.ok(entry.amount_nanousd > 0, `${entry.endpoint} ${entry.model} charged`);
    assert.equal(entry.estimated, false, `${entry.endpoint} ${entry.model} from usage`);
  }
  assert.deepEqual(
    [...new Set(billed.values())].sort(),
    ["anthropic", "deepseek", "gemini", "moonshot", "openai", "xai", "zhipu"],
  );
  const usage = await usageOf(gateway, key);
  assert.equal(usage.requests, billed.size);
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

Deno.test("`deno task start -- --emulate` serves with the start task's own permissions", async () => {
  // The task runs `main.ts` and reads `./src` relative to its deno.json: a copy of the program in
  // a fresh directory, so that its store is not the checkout's.
  const root = new URL("../", import.meta.url).pathname;
  const dir = await Deno.makeTempDir({ prefix: "switchyard-task-" });
  for (const name of ["deno.json", "deno.lock", "main.ts", "src"]) {
    await new Deno.Command("cp", { args: ["-r", `${root}${name}`, dir] }).output();
  }
  const task = new Deno.Command(Deno.execPath(), {
    args: ["task", "start", "--", "--emulate", "--port", "0", "--workers", "2"],
    cwd: dir,
    // What the harness passes (no provider key, no SWITCHYARD_* setting from this shell).
    clearEnv: true,
    env: {
      NO_COLOR: "1",
      ...Object.fromEntries(
        ["PATH", "HOME", "DENO_DIR", "XDG_CACHE_HOME"].flatMap((name) => {
          const value = Deno.env.get(name);
          return value === undefined ? [] : [[name, value]];
        }),
      ),
    },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(task.stderr).text();
  let drained: Promise<void> | undefined;
  try {
    const lines = task.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let out = "";
    while (!/"msg":"listening"/.test(out)) {
      const { value, done } = await lines.read();
      if (done) throw new Error(`the task ended before listening:\n${out}${await stderr}`);
      out += value;
    }
    // The rest of the log is read and dropped, so that the task never waits on a full pipe.
    drained = (async () => {
      while (!(await lines.read()).done) { /* drop */ }
    })();
    assert.match(out, /"msg":"demo mode/);
    const port = JSON.parse(out.split("\n").find((l) => l.includes('"listening"'))!).port;
    const created = await runCli(dir, ["keys", "create", "--account", "task", "--credit", "1"]);
    const key = created.stdout.split("\n")[0];
    const res = await fetch(`http://127.0.0.1:${port}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "claude-sonnet-4-5", input: "Hello" }),
    });
    assert.equal(res.status, 200, await res.text());
  } finally {
    task.kill("SIGTERM");
    const status = await task.status;
    await drained;
    assert.equal(status.code, 0, `deno task passes SIGTERM on: a clean drain\n${await stderr}`);
    await Deno.remove(dir, { recursive: true });
  }
});
