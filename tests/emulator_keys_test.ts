/**
 * The emulator's upstream keys, each good or playing a fault on every route of its family before
 * the route runs: exhausted (429 with `retry-after`), invalid (refused as an unknown key), failing
 * (500), overloaded (Anthropic's 529, 503 elsewhere), each in the family's own error envelope; the
 * control endpoint `/_emulator/keys` (counts, faults changed at run time); `parseKeySpec`; and
 * `main.ts emulate --key K[:fault]` repeated.
 */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { startEmulator } from "../src/emulator/server.ts";
import { parseKeySpec } from "../src/emulator/keys.ts";

const MAIN = new URL("../main.ts", import.meta.url).pathname;
const ROOT = new URL("../", import.meta.url).pathname;

const KEYS = {
  good: "sk-good-aaaa1111",
  busy: "sk-busy-bbbb2222",
  calm: "sk-calm-cccc3333",
  bad: "sk-bad-dddd4444",
  down: "sk-down-eeee5555",
  full: "sk-full-ffff6666",
  flip: "sk-flip-gggg7777",
};

/** One route per family: how to carry a key there, and a minimal valid body. */
const FAMILIES = {
  openai: {
    path: "/openai/v1/responses",
    headers: (key: string) => ({ authorization: `Bearer ${key}` }),
    body: { model: "gpt-5.4", input: "hello there" },
  },
  anthropic: {
    path: "/anthropic/v1/messages",
    headers: (key: string) => ({ "x-api-key": key, "anthropic-version": "2023-06-01" }),
    body: {
      model: "claude-sonnet-4-5",
      max_tokens: 64,
      messages: [{ role: "user", content: "hello there" }],
    },
  },
  gemini: {
    path: "/gemini/v1beta/models/gemini-2.5-flash:generateContent",
    headers: (key: string) => ({ "x-goog-api-key": key }),
    body: { contents: [{ role: "user", parts: [{ text: "hello there" }] }] },
  },
};
type FamilyName = keyof typeof FAMILIES;
const NAMES = Object.keys(FAMILIES) as FamilyName[];

async function call(base: string, family: FamilyName, key: string) {
  const { path, headers, body } = FAMILIES[family];
  const res = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers(key) },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch { /* not JSON */ }
  return { status: res.status, headers: res.headers, text, json };
}

/** `GET /_emulator/keys`. */
async function keyReport(base: string): Promise<Record<string, { requests: number; fault: any }>> {
  const res = await fetch(`${base}/_emulator/keys`);
  assert.equal(res.status, 200);
  return await res.json();
}

async function setFault(base: string, body: Record<string, unknown>) {
  const res = await fetch(`${base}/_emulator/keys`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  assert.equal(res.status, 200, text);
}

/** Runs `fn` against an emulator with `keys`, shut down after. */
async function withEmulator(
  keys: Parameters<typeof startEmulator>[0],
  fn: (base: string) => Promise<void>,
) {
  const emulator = startEmulator(keys);
  try {
    await fn(`http://127.0.0.1:${emulator.addr.port}`);
  } finally {
    await emulator.shutdown();
  }
}

const ALL = {
  keys: [
    { key: KEYS.good },
    { key: KEYS.busy, fault: "exhausted" as const, retryAfter: 5 },
    { key: KEYS.calm, fault: "exhausted" as const, retryAfter: 0 },
    { key: KEYS.full, fault: "exhausted" as const },
    { key: KEYS.bad, fault: "invalid" as const },
    { key: KEYS.down, fault: "failing" as const },
    { key: "sk-over-hhhh8888", fault: "overloaded" as const },
  ],
};

Deno.test("a good key is served on every family", async () => {
  await withEmulator(ALL, async (base) => {
    for (const family of NAMES) {
      const res = await call(base, family, KEYS.good);
      assert.equal(res.status, 200, `${family}: ${res.text}`);
    }
  });
});

Deno.test("an exhausted key: 429 in each family's envelope, with its retry-after", async () => {
  await withEmulator(ALL, async (base) => {
    const openai = await call(base, "openai", KEYS.busy);
    assert.equal(openai.status, 429, openai.text);
    assert.equal(openai.json.error.type, "requests");
    assert.equal(openai.json.error.code, "rate_limit_exceeded");
    assert.equal(openai.headers.get("retry-after"), "5");

    const anthropic = await call(base, "anthropic", KEYS.busy);
    assert.equal(anthropic.status, 429, anthropic.text);
    assert.equal(anthropic.json.type, "error");
    assert.equal(anthropic.json.error.type, "rate_limit_error");
    assert.equal(anthropic.headers.get("retry-after"), "5");

    const gemini = await call(base, "gemini", KEYS.busy);
    assert.equal(gemini.status, 429, gemini.text);
    assert.equal(gemini.json.error.code, 429);
    assert.equal(gemini.json.error.status, "RESOURCE_EXHAUSTED");
    assert.equal(gemini.headers.get("retry-after"), "5");

    // No number: one second, as the real services most often say.
    for (const family of NAMES) {
      const res = await call(base, family, KEYS.full);
      assert.equal(res.status, 429, `${family}: ${res.text}`);
      assert.equal(res.headers.get("retry-after"), "1", family);
    }
  });
});

Deno.test("exhausted=0: a 429 with no retry-after", async () => {
  await withEmulator(ALL, async (base) => {
    for (const family of NAMES) {
      const res = await call(base, family, KEYS.calm);
      assert.equal(res.status, 429, `${family}: ${res.text}`);
      assert.equal(res.headers.get("retry-after"), null, family);
    }
  });
});

Deno.test("an invalid key gets the unknown key's answer; an unknown key is refused", async () => {
  await withEmulator(ALL, async (base) => {
    for (const family of NAMES) {
      const invalid = await call(base, family, KEYS.bad);
      const unknown = await call(base, family, "sk-none-zzzz0000");
      assert.equal(invalid.status, family === "gemini" ? 400 : 401, `${family}: ${invalid.text}`);
      assert.equal(unknown.status, invalid.status, `${family}: ${unknown.text}`);
      if (family === "anthropic") {
        assert.equal(invalid.json.error.type, "authentication_error");
        assert.equal(invalid.json.error.message, unknown.json.error.message);
      } else if (family === "openai") {
        assert.equal(invalid.json.error.code, "invalid_api_key");
        assert.equal(unknown.json.error.code, "invalid_api_key");
        assert.ok(!invalid.text.includes(KEYS.bad), "the key is masked");
      } else {
        assert.equal(invalid.json.error.details[0].reason, "API_KEY_INVALID");
        assert.deepEqual(invalid.json, unknown.json);
      }
    }
  });
});

Deno.test("a failing key: 500 in each family's envelope", async () => {
  await withEmulator(ALL, async (base) => {
    const openai = await call(base, "openai", KEYS.down);
    assert.equal(openai.status, 500, openai.text);
    assert.equal(openai.json.error.type, "server_error");
    const anthropic = await call(base, "anthropic", KEYS.down);
    assert.equal(anthropic.status, 500, anthropic.text);
    assert.equal(anthropic.json.error.type, "api_error");
    const gemini = await call(base, "gemini", KEYS.down);
    assert.equal(gemini.status, 500, gemini.text);
    assert.equal(gemini.json.error.status, "INTERNAL");
  });
});

Deno.test("an overloaded key: 529 on Anthropic, 503 elsewhere", async () => {
  await withEmulator(ALL, async (base) => {
    const key = "sk-over-hhhh8888";
    const openai = await call(base, "openai", key);
    assert.equal(openai.status, 503, openai.text);
    assert.equal(openai.json.error.type, "server_error");
    const anthropic = await call(base, "anthropic", key);
    assert.equal(anthropic.status, 529, anthropic.text);
    assert.equal(anthropic.json.error.type, "overloaded_error");
    const gemini = await call(base, "gemini", key);
    assert.equal(gemini.status, 503, gemini.text);
    assert.equal(gemini.json.error.status, "UNAVAILABLE");
  });
});

Deno.test("a fault plays on every route of the family, not only the text ones", async () => {
  await withEmulator(ALL, async (base) => {
    const res = await fetch(`${base}/openai/v1/embeddings`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEYS.down}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "text-embedding-3-small", input: "hi" }),
    });
    assert.equal(res.status, 500, await res.text());
    // The keyless local route ignores keys, faulty or not.
    const local = await fetch(`${base}/local/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEYS.down}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "llama-3", messages: [{ role: "user", content: "hi" }] }),
    });
    assert.equal(local.status, 200, await local.text());
  });
});

Deno.test("GET /_emulator/keys counts every request that carried each key", async () => {
  await withEmulator(ALL, async (base) => {
    await call(base, "openai", KEYS.good);
    await call(base, "gemini", KEYS.good);
    await call(base, "anthropic", KEYS.busy);
    await call(base, "openai", KEYS.bad);
    const report = await keyReport(base);
    assert.deepEqual(report[KEYS.good], { requests: 2, fault: null });
    assert.deepEqual(report[KEYS.busy], { requests: 1, fault: "exhausted" });
    assert.deepEqual(report[KEYS.bad], { requests: 1, fault: "invalid" });
    assert.deepEqual(report[KEYS.down], { requests: 0, fault: "failing" });
  });
});

Deno.test("POST /_emulator/keys flips a key from good to exhausted and back", async () => {
  await withEmulator({ keys: [{ key: KEYS.flip }] }, async (base) => {
    assert.equal((await call(base, "openai", KEYS.flip)).status, 200);
    await setFault(base, { key: KEYS.flip, fault: "exhausted", retryAfter: 3 });
    const limited = await call(base, "openai", KEYS.flip);
    assert.equal(limited.status, 429, limited.text);
    assert.equal(limited.headers.get("retry-after"), "3");
    assert.equal((await keyReport(base))[KEYS.flip].fault, "exhausted");
    await setFault(base, { key: KEYS.flip, fault: null });
    assert.equal((await call(base, "anthropic", KEYS.flip)).status, 200);
    assert.deepEqual((await keyReport(base))[KEYS.flip], { requests: 3, fault: null });
    // A key added at run time is accepted from then on.
    assert.equal((await call(base, "gemini", KEYS.good)).status, 400);
    await setFault(base, { key: KEYS.good, fault: null });
    assert.equal((await call(base, "gemini", KEYS.good)).status, 200);
    // A malformed change is refused.
    const bad = await fetch(`${base}/_emulator/keys`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ key: KEYS.flip, fault: "bogus" }),
    });
    assert.equal(bad.status, 400, await bad.text());
  });
});

Deno.test("requiredKey alone keeps working", async () => {
  await withEmulator({ requiredKey: KEYS.good }, async (base) => {
    assert.equal((await call(base, "openai", KEYS.good)).status, 200);
    assert.equal((await call(base, "openai", KEYS.flip)).status, 401);
  });
});

Deno.test("parseKeySpec reads every form and rejects malformed ones", () => {
  assert.deepEqual(parseKeySpec("K"), { key: "K" });
  assert.deepEqual(parseKeySpec("K:exhausted"), { key: "K", fault: "exhausted" });
  assert.deepEqual(parseKeySpec("K:exhausted=5"), { key: "K", fault: "exhausted", retryAfter: 5 });
  assert.deepEqual(parseKeySpec("K:exhausted=0"), { key: "K", fault: "exhausted", retryAfter: 0 });
  for (const fault of ["invalid", "failing", "overloaded"]) {
    assert.deepEqual(parseKeySpec(`K:${fault}`), { key: "K", fault });
  }
  for (const text of ["K:bogus", ":exhausted", "K:exhausted=x", "K:", "", "K:failing=5"]) {
    assert.throws(() => parseKeySpec(text), Error, text);
  }
});

/** `main.ts emulate` with `args`, until it logs that it listens; its base URL and a stop. */
async function startCli(args: string[]) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN, "emulate", "--port", "0", ...args],
    cwd: ROOT,
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let port = 0;
  while (!port) {
    const { value, done } = await lines.read();
    if (done) {
      await child.status;
      throw new Error(`the emulator exited before listening: ${buffer}`);
    }
    buffer += value;
    for (const line of buffer.split("\n").slice(0, -1)) {
      try {
        const entry = JSON.parse(line);
        if (entry.msg === "emulator listening") port = entry.port;
      } catch { /* not JSON */ }
    }
  }
  return {
    base: `http://127.0.0.1:${port}`,
    async stop() {
      child.kill("SIGTERM");
      await lines.cancel();
      await child.status;
    },
  };
}

Deno.test("main.ts emulate --key K --key K2:exhausted=7", async () => {
  const cli = await startCli(["--key", KEYS.good, "--key", `${KEYS.busy}:exhausted=7`]);
  try {
    assert.equal((await call(cli.base, "openai", KEYS.good)).status, 200);
    const limited = await call(cli.base, "anthropic", KEYS.busy);
    assert.equal(limited.status, 429, limited.text);
    assert.equal(limited.json.error.type, "rate_limit_error");
    assert.equal(limited.headers.get("retry-after"), "7");
    assert.equal((await call(cli.base, "gemini", KEYS.flip)).status, 400, "an unknown key");
    const report = await keyReport(cli.base);
    assert.deepEqual(report[KEYS.good], { requests: 1, fault: null });
    assert.deepEqual(report[KEYS.busy], { requests: 1, fault: "exhausted" });
  } finally {
    await cli.stop();
  }
});

Deno.test("main.ts emulate refuses a malformed --key", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN, "emulate", "--port", "0", "--key", "K:bogus"],
    cwd: ROOT,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 2);
  assert.match(new TextDecoder().decode(out.stderr), /bogus/);
});
