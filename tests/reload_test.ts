/**
 * Reloading the config while serving (SIGHUP, `switchyard reload`): a valid file's prices and
 * models apply to the next calls on every thread while a stream already running finishes on the
 * old ones; an invalid file is refused with one log line naming the field, and the old config
 * keeps serving.
 */
import assert from "node:assert/strict";
import { eventually, startStack, TEST_PRICE, usageOf } from "./helpers/setup.ts";
import { logEntries, requestLogged } from "./helpers/gateway.ts";
import { waitFor } from "./helpers/poll.ts";

const stack = await startStack({ workers: 2 });
const { gateway } = stack;
Deno.test.afterAll(() => stack.stop());

const configPath = `${gateway.dir}/switchyard.json`;
const original = JSON.parse(await Deno.readTextFile(configPath));

function respond(key: string, model: string, input: string, stream = false) {
  return fetch(`${gateway.url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model, input, max_output_tokens: 64, stream }),
  });
}

/** The first log entry (stdout or stderr) named `msg` since stdout line `after`. */
function eventuallyLogged(msg: string, after: number) {
  return waitFor(
    () =>
      logEntries({ logs: [...gateway.logs.slice(after), ...gateway.errors] }).find((e) =>
        e.msg === msg
      ),
    { what: `a "${msg}" log line` },
  );
}

/** Waits until the account's calls are all settled (none held), `requests` of them. */
async function settled(key: string, requests: number): Promise<void> {
  await eventually(async () => {
    const usage = await usageOf(gateway, key);
    return usage.requests === requests && usage.held_nanousd === 0;
  }, { what: `${requests} settled calls` });
}

/** Charges of an account's calls, newest last, from its usage by model. */
async function spentOn(key: string, model: string): Promise<number> {
  return (await usageOf(gateway, key)).by_model[model]?.spent_nanousd ?? 0;
}

Deno.test("SIGHUP with a valid file: new prices and models for the next calls, the running stream on the old", async () => {
  const { key } = await gateway.createKey("reload-a", "--credit", "5");
  // A slow stream (about 6 s) started before the reload, still running after it.
  const slow = await respond(key, "gpt-test", "[[emulate delay=200 words=30]] slow one", true);
  assert.equal(slow.status, 200);
  const reader = slow.body!.getReader();
  await reader.read();

  const next = structuredClone(original);
  next.models["gpt-test"].price = { ...TEST_PRICE, output: TEST_PRICE.output * 10 };
  next.models["gpt-new"] = { provider: "openai", upstream: "gpt-5.4", price: TEST_PRICE };
  await Deno.writeTextFile(configPath, JSON.stringify(next));
  const mark = gateway.logs.length;
  Deno.kill(gateway.pid, "SIGHUP");
  await eventuallyLogged("config reloaded", mark);

  // The stream finishes, billed at the price it started with.
  let text = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  assert.match(text, /response\.completed/);
  const completed = JSON.parse(
    text.split("\n").find((l) => l.startsWith("data:") && l.includes('"response.completed"'))!
      .slice(5),
  );
  const u = completed.response.usage;
  await settled(key, 1);
  assert.equal(
    await spentOn(key, "gpt-test"),
    u.input_tokens * TEST_PRICE.input * 1000 + u.output_tokens * TEST_PRICE.output * 1000,
    "the old price",
  );

  // Both threads answer the new model and charge the new price: calls on fresh connections (the
  // kernel spreads those over the threads) until each thread has served the new model.
  const { key: fresh } = await gateway.createKey("reload-b", "--credit", "5");
  const client = Deno.createHttpClient({ poolMaxIdlePerHost: 0 });
  const served = new Set<number>();
  let calls = 0;
  while (served.size < 2 && calls < 40) {
    const res = await fetch(`${gateway.url}/v1/responses`, {
      client,
      method: "POST",
      headers: { authorization: `Bearer ${fresh}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-new", input: `after ${calls}`, max_output_tokens: 64 }),
    });
    assert.equal(res.status, 200, `call ${calls}`);
    await res.text();
    calls++;
    const entry = await requestLogged(gateway, res.headers.get("x-request-id")!);
    assert.equal(entry.model, "gpt-new");
    served.add(entry.worker);
  }
  client.close();
  assert.equal(served.size, 2, "both threads served the new model");
  const priced = await respond(fresh, "gpt-test", "the new price");
  const answer = await priced.json();
  await settled(fresh, calls + 1);
  assert.equal(
    await spentOn(fresh, "gpt-test"),
    answer.usage.input_tokens * TEST_PRICE.input * 1000 +
      answer.usage.output_tokens * TEST_PRICE.output * 10 * 1000,
    "the new price",
  );
});

Deno.test("an invalid file is refused with one line naming the field; `switchyard reload` checks it first", async () => {
  const { key } = await gateway.createKey("reload-c", "--credit", "1");
  // A stream in flight across the refused reload.
  const slow = await respond(key, "gpt-test", "[[emulate delay=100 words=30]] across", true);
  const slowText = slow.text();
  const bad = structuredClone(original);
  bad.models["gpt-test"].price = { input: "cheap" };
  await Deno.writeTextFile(configPath, JSON.stringify(bad));
  // The CLI checks the file before asking: it names the field and asks nothing.
  const refusedByCli = await gateway.cli("reload");
  assert.equal(refusedByCli.code, 78);
  assert.match(refusedByCli.stderr, /models\["gpt-test"\]\.price\.input/);
  const errorsBefore = gateway.errors.length;
  const logsBefore = gateway.logs.length;
  Deno.kill(gateway.pid, "SIGHUP");
  const refused = await waitFor(() =>
    logEntries({
      logs: [...gateway.logs.slice(logsBefore), ...gateway.errors.slice(errorsBefore)],
    }).find((e) => e.msg === "config reload refused: the running config stays"), {
    what: "the refusal's log line",
  });
  assert.match(refused.error, /models\["gpt-test"\]\.price\.input/);
  // The stream finished, and the running config still serves.
  assert.match(await slowText, /response\.completed/);
  const res = await respond(key, "gpt-test", "still here");
  assert.equal(res.status, 200);
  await res.text();
  // Fixed, and asked for through the CLI: reloaded.
  await Deno.writeTextFile(configPath, JSON.stringify(original));
  const mark = gateway.logs.length;
  const asked = await gateway.cli("reload");
  assert.equal(asked.code, 0, asked.stderr);
  await eventuallyLogged("config reloaded", mark);
});

Deno.test("a reload that changes settings only a restart can change warns, naming them, and keeps their values", async () => {
  const { key } = await gateway.createKey("reload-fixed", "--credit", "1");
  const next = structuredClone(original);
  // The store's file and the metric bounds are fixed while running; a price is not.
  next.store = { path: "./data/elsewhere.db" };
  next.server = { ...next.server, metricsModels: 7 };
  next.models["gpt-test"].price = { ...TEST_PRICE, output: TEST_PRICE.output * 2 };
  await Deno.writeTextFile(configPath, JSON.stringify(next));
  const mark = gateway.logs.length;
  Deno.kill(gateway.pid, "SIGHUP");
  const warning = await eventuallyLogged(
    "config reload: these settings need a restart and keep their values",
    mark,
  );
  assert.equal(warning.level, "warn");
  assert.deepEqual(warning.settings.filter((s: string) => s !== "spoolDir").sort(), [
    "dbPath",
    "metricsModels",
  ]);
  await eventuallyLogged("config reloaded", mark);
  // The rest applied; the store is the one it started with (the key made before still works,
  // and its calls are billed there).
  const res = await respond(key, "gpt-test", "after the warning");
  assert.equal(res.status, 200);
  const { usage } = await res.json();
  await settled(key, 1);
  assert.equal(
    await spentOn(key, "gpt-test"),
    usage.input_tokens * TEST_PRICE.input * 1000 + usage.output_tokens * TEST_PRICE.output * 2000,
  );
  await assert.rejects(Deno.stat(`${gateway.dir}/data/elsewhere.db`), Deno.errors.NotFound);
  await Deno.writeTextFile(configPath, JSON.stringify(original));
  const restored = gateway.logs.length;
  Deno.kill(gateway.pid, "SIGHUP");
  await eventuallyLogged("config reloaded", restored);
});
