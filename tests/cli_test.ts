/** The operator CLI and startup configuration, run as real processes with the compiled permissions. */
import assert from "node:assert/strict";
import { freePort, type Gateway, logEntries, runCli, startGateway } from "./helpers/gateway.ts";
import { bearer, type Json, post } from "./helpers/http.ts";

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

Deno.test("every SWITCHYARD_* variable overrides the file; flags override the environment", async () => {
  const dir = await tempDir();
  const file = (model: string, host: string) => ({
    server: { host, port: 9, maxBodyBytes: 65536, accessLog: true, workers: 1 },
    store: { path: "./data/from-file.db" },
    limits: { defaultRpm: 100 },
    admin: { token: "file-admin-token-0123456789" },
    defaultCatalog: false,
    providers: { local: { type: "openai-compatible", baseUrl: "http://127.0.0.1:9/v1" } },
    models: { [model]: { provider: "local", price: { input: 1, output: 1 } } },
  });
  await Deno.writeTextFile(
    `${dir}/switchyard.json`,
    JSON.stringify(file("env-model", "127.0.0.2")),
  );
  const envPort = freePort();
  const env = {
    SWITCHYARD_CONFIG: "./switchyard.json",
    SWITCHYARD_HOST: "127.0.0.1",
    SWITCHYARD_PORT: String(envPort),
    SWITCHYARD_DB: "./data/from-env.db",
    SWITCHYARD_DEFAULT_RPM: "2",
    SWITCHYARD_MAX_BODY_BYTES: "2048",
    SWITCHYARD_ACCESS_LOG: "0",
    SWITCHYARD_WORKERS: "2",
    SWITCHYARD_ADMIN_TOKEN: "env-admin-token-0123456789",
  };
  const fromEnv = await startGateway({ dir, env, bare: true });
  try {
    const listening = logEntries(fromEnv).find((e) => e.msg === "listening")!;
    assert.deepEqual(
      [listening.host, listening.port, listening.workers, listening.store],
      ["127.0.0.1", envPort, 2, "./data/from-env.db"],
    );
    assert.ok((await Deno.stat(`${dir}/data/from-env.db`)).isFile);
    await assert.rejects(Deno.stat(`${dir}/data/from-file.db`), Deno.errors.NotFound);
    // A key without an rpm of its own gets SWITCHYARD_DEFAULT_RPM (2), not the file's 100.
    const { key } = await fromEnv.createKey("env-acct", "--credit", "1");
    const models = async (gateway: Gateway, secret: string) => {
      const res = await fetch(`${gateway.url}/v1/models`, { headers: bearer(secret) });
      return {
        status: res.status,
        ids: res.ok ? (await res.json()).data.map((m: Json) => m.id) : [],
      };
    };
    assert.deepEqual(await models(fromEnv, key), { status: 200, ids: ["env-model"] });
    const big = await post(fromEnv.url, "/v1/responses", bearer(key), {
      model: "env-model",
      input: "x".repeat(3000),
    });
    assert.equal(big.status, 413, "past SWITCHYARD_MAX_BODY_BYTES");
    await big.body?.cancel();
    assert.equal((await models(fromEnv, key)).status, 429, "past SWITCHYARD_DEFAULT_RPM");
    // The admin token is the environment's; no access-log line was written.
    const metrics = async (token: string) => {
      const res = await fetch(`${fromEnv.url}/metrics`, { headers: bearer(token) });
      await res.body?.cancel();
      return res.status;
    };
    assert.equal(await metrics("env-admin-token-0123456789"), 200);
    assert.equal(await metrics("file-admin-token-0123456789"), 401);
    assert.ok(!logEntries(fromEnv).some((e) => e.msg === "request"), "SWITCHYARD_ACCESS_LOG=0");
    assert.equal((await fromEnv.terminate()).code, 0);

    // Flags beat the environment: the file (the environment names one that does not exist), the
    // host, the port, the threads.
    const flagPort = freePort();
    const fromFlags = await startGateway({
      dir,
      env: { ...env, SWITCHYARD_HOST: "127.0.0.2", SWITCHYARD_CONFIG: "/etc/switchyard/none.json" },
      bare: true,
      args: ["--config", "./switchyard.json", "--host", "127.0.0.1", "--port", String(flagPort)]
        .concat(["--workers", "1"]),
    });
    try {
      const started = logEntries(fromFlags).find((e) => e.msg === "listening")!;
      assert.deepEqual([started.host, started.port, started.workers], ["127.0.0.1", flagPort, 1]);
      assert.deepEqual((await models(fromFlags, key)).ids, ["env-model"]);
    } finally {
      await fromFlags.terminate();
    }
    // SWITCHYARD_DB_URL is read too: a URL that is not PostgreSQL's is refused, naming it.
    const url = await runCli(dir, ["config", "check"], { ...env, SWITCHYARD_DB_URL: "mysql://x" });
    assert.equal(url.code, 78);
    assert.match(url.stderr, /SWITCHYARD_DB_URL/);
  } finally {
    await fromEnv.stop();
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

/** The process's threads named as Deno names a Web Worker's (`worker-N`). */
function workerThreads(pid: number): number {
  let count = 0;
  for (const task of Deno.readDirSync(`/proc/${pid}/task`)) {
    try {
      if (
        /^worker-\d+$/.test(Deno.readTextFileSync(`/proc/${pid}/task/${task.name}/comm`).trim())
      ) {
        count++;
      }
    } catch { /* the thread has ended */ }
  }
  return count;
}

Deno.test("serve: the serving thread started with the process is used, or stopped when the config file says one thread", async () => {
  if (navigator.hardwareConcurrency < 2) {
    console.log("skipped: one core, so no thread is started early (nothing to check)");
    return;
  }
  // No --workers: the first thread starts before the config is read; the file says one thread.
  const dir = await tempDir({ server: { workers: 1 } });
  const one = await startGateway({
    dir,
    bare: true,
    args: ["--host", "127.0.0.1", "--port", "0", "--config", "./switchyard.json"],
  });
  try {
    assert.equal(logEntries(one).find((e) => e.msg === "listening")!.workers, 1);
    assert.deepEqual(await (await fetch(`${one.url}/healthz`)).json(), { status: "ok" });
    await eventuallyZero(() => workerThreads(one.pid), "the early thread was stopped");
  } finally {
    await one.stop();
  }
  // The file says two: the early thread is the first of them (two serving threads, and the
  // store's checkpointer thread the main thread starts with them; no third serving thread).
  const two = await tempDir({ server: { workers: 2 } });
  const served = await startGateway({
    dir: two,
    bare: true,
    args: ["--host", "127.0.0.1", "--port", "0", "--config", "./switchyard.json"],
  });
  try {
    assert.equal(logEntries(served).find((e) => e.msg === "listening")!.workers, 2);
    assert.deepEqual(await (await fetch(`${served.url}/healthz`)).json(), { status: "ok" });
    assert.equal(workerThreads(served.pid), 3);
  } finally {
    await served.stop();
  }
});

async function eventuallyZero(count: () => number, what: string): Promise<void> {
  for (let i = 0; i < 100 && count() > 0; i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(count(), 0, what);
}

Deno.test("serve without --unstable-net: a warning and one thread, unless threads were asked for (exit 2)", async () => {
  // Threads not asked for (their number is the cores'): a warning, and one thread serves.
  const dir = await tempDir({ server: {} });
  const fallback = await startGateway({
    dir,
    bare: true,
    args: ["--host", "127.0.0.1", "--port", "0", "--config", "./switchyard.json"],
    without: ["--unstable-net"],
  });
  try {
    const entries = logEntries(fallback);
    const listening = entries.find((e) => e.msg === "listening")!;
    // The default is one thread per core: on one core no thread was tried, nothing to warn of.
    if (navigator.hardwareConcurrency > 1) {
      const warning = entries.find((e) =>
        e.msg === "serving threads could not start: serving on one thread"
      );
      assert.equal(warning?.level, "warn", JSON.stringify(entries));
      assert.match(warning.error, /--unstable-net/);
    }
    assert.equal(listening.workers, 1);
    const res = await fetch(`${fallback.url}/healthz`);
    assert.deepEqual(await res.json(), { status: "ok" });
    assert.equal((await fallback.terminate()).code, 0);
  } finally {
    await fallback.stop();
  }
  // Asked for — by the flag, the environment or the file — it is an error, exit code 2.
  const asked: [string[], Record<string, string>, unknown][] = [
    [["--workers", "2"], {}, {}],
    [[], { SWITCHYARD_WORKERS: "2" }, {}],
    [[], {}, { server: { workers: 2 } }],
  ];
  for (const [flags, env, config] of asked) {
    const where = await tempDir(config);
    try {
      const result = await runCli(
        where,
        ["serve", "--port", "0", "--config", "./switchyard.json", ...flags],
        env,
        ["--unstable-net"],
      );
      assert.equal(result.code, 2, `${JSON.stringify([flags, env, config])}: ${result.stderr}`);
      assert.match(result.stderr, /could not start the serving threads: .*--unstable-net/);
    } finally {
      await Deno.remove(where, { recursive: true });
    }
  }
});
