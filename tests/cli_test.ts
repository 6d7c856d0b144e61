/** The operator CLI and startup configuration, run as real processes with the compiled permissions. */
import assert from "node:assert/strict";
import { runCli, startGateway } from "./helpers/gateway.ts";

async function tempDir(config?: unknown): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "switchyard-cli-" });
  if (config !== undefined) {
    await Deno.writeTextFile(`${dir}/switchyard.json`, JSON.stringify(config));
  }
  return dir;
}

Deno.test("keys create → list → revoke round trip, and accounts list/credit", async () => {
  const dir = await tempDir();
  try {
    const created = await runCli(dir, [
      "keys",
      "create",
      "--account",
      "acme",
      "--rpm",
      "30",
      "--credit",
      "5",
      "--json",
    ]);
    assert.equal(created.code, 0, created.stderr);
    const key = JSON.parse(created.stdout);
    assert.equal(key.account, "acme");
    assert.match(key.id, /^key_[a-z2-9]{12}$/);
    assert.match(key.key, /^sy-[a-z2-9]{12}-[A-Za-z0-9_-]{43}$/);
    assert.equal(key.rpm, 30);

    const listed = await runCli(dir, ["keys", "list", "--json"]);
    assert.equal(listed.code, 0, listed.stderr);
    const keys = JSON.parse(listed.stdout);
    assert.equal(keys.length, 1);
    assert.equal(keys[0].id, key.id);
    assert.equal(keys[0].account, "acme");
    assert.equal(keys[0].revoked_at, null);
    assert.ok(!listed.stdout.includes(key.key), "listing must not show the secret");
    const plain = await runCli(dir, ["keys", "list"]);
    assert.match(plain.stdout, new RegExp(`${key.id}\\s+acme`));

    const revoked = await runCli(dir, ["keys", "revoke", key.id]);
    assert.equal(revoked.code, 0, revoked.stderr);
    const after = JSON.parse((await runCli(dir, ["keys", "list", "--json"])).stdout);
    assert.match(after[0].revoked_at, /^\d{4}-\d\d-\d\dT/);
    const again = await runCli(dir, ["keys", "revoke", key.id]);
    assert.equal(again.code, 2);
    assert.match(again.stderr, /no active key/);

    const credited = await runCli(dir, ["accounts", "credit", "acme", "2.50", "--json"]);
    assert.equal(credited.code, 0, credited.stderr);
    assert.equal(JSON.parse(credited.stdout).balance_usd, "7.50");
    const accounts = JSON.parse((await runCli(dir, ["accounts", "list", "--json"])).stdout);
    assert.deepEqual(
      accounts.map((a: Record<string, unknown>) => [a.name, a.balance_nanousd, a.spent_usd]),
      [["acme", 7_500_000_000, "0.00"]],
    );
    const missing = await runCli(dir, ["accounts", "credit", "nobody", "1"]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /no account named "nobody"/);
    const bad = await runCli(dir, [
      "keys",
      "create",
      "--account",
      "acme",
      "--credit",
      "0.0000000001",
    ]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--credit must have at most 9 decimal places/);
    const keyFile = await Deno.readFile(`${dir}/data/switchyard.db`);
    const secretBytes = new TextEncoder().encode(key.key);
    assert.ok(!includes(keyFile, secretBytes), "the store must hold only hashes, never the key");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an invalid config file stops startup with one message naming the field and rule", async () => {
  const cases: [unknown, RegExp][] = [
    [{ server: { port: 70000 } }, /server\.port: must be between 0 and 65535/],
    [{ models: { "gpt-x": { provider: "openai" } } }, /models\["gpt-x"\]: has no price/],
    [
      { models: { "gpt-x": { provider: "nowhere", free: true } } },
      /models\["gpt-x"\]\.provider: "nowhere" is not a provider/,
    ],
    [
      { providers: { p: { type: "carrier-pigeon", baseUrl: "http://x" } } },
      /providers\.p\.type: must be one of/,
    ],
    [{ limits: { defaultRpm: -1 } }, /limits\.defaultRpm: must be ≥ 0/],
    [{ colour: "blue" }, /colour: is not a known field/],
  ];
  for (const [config, message] of cases) {
    const dir = await tempDir(config);
    try {
      const result = await runCli(dir, ["serve", "--config", "./switchyard.json", "--port", "0"]);
      assert.equal(result.code, 78, JSON.stringify(config));
      const lines = result.stderr.trim().split("\n");
      assert.equal(lines.length, 1, result.stderr);
      assert.match(lines[0], /^switchyard: config file \.\/switchyard\.json: /);
      assert.match(lines[0], message);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  }
  const dir = await tempDir();
  await Deno.writeTextFile(`${dir}/switchyard.json`, "{ not json");
  const broken = await runCli(dir, ["config", "check", "--config", "./switchyard.json"]);
  assert.equal(broken.code, 78);
  assert.match(broken.stderr, /invalid JSON/);
  const env = await runCli(dir, ["config", "check"], { SWITCHYARD_PORT: "eighty" });
  assert.equal(env.code, 78);
  assert.match(env.stderr, /SWITCHYARD_PORT: must be an integer/);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("serve starts on embedded defaults with no config file, logging disabled providers", async () => {
  const gateway = await startGateway({ env: { OPENAI_API_KEY: "sk-upstream" } });
  try {
    const res = await fetch(`${gateway.url}/healthz`);
    assert.deepEqual(await res.json(), { status: "ok" });
    const notices = gateway.logs.map((l) => JSON.parse(l)).filter((e) => e.level === "warn");
    assert.ok(notices.some((e) => e.msg === "provider gemini disabled: GEMINI_API_KEY is not set"));
    assert.ok(!notices.some((e) => /provider openai/.test(e.msg)));
    const stat = await Deno.stat(`${gateway.dir}/data/switchyard.db`);
    assert.ok(stat.isFile);
  } finally {
    await gateway.stop();
  }
});

Deno.test("environment variables override the file; flags override the environment", async () => {
  const dir = await tempDir({ server: { port: 9 }, store: { path: "./data/from-file.db" } });
  try {
    const result = await runCli(dir, ["config", "check", "--config", "./switchyard.json"], {
      SWITCHYARD_DB: "./data/from-env.db",
    });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /store \.\/data\/from-env\.db/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

function includes(haystack: Uint8Array, needle: Uint8Array): boolean {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}

Deno.test("options after a `--` (as `deno task start -- --emulate` passes them) are still options", async () => {
  const dir = await Deno.makeTempDir({ prefix: "switchyard-cli-" });
  try {
    const listed = await runCli(dir, ["keys", "--", "list", "--json"]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual(JSON.parse(listed.stdout), []);
    const extra = await runCli(dir, ["serve", "extra"]);
    assert.equal(extra.code, 2);
    assert.match(extra.stderr, /serve takes no argument "extra"/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
