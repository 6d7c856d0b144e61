/**
 * The benchmark's bare proxy (`bench/bare_proxy.ts`) in both its modes relays what the upstream
 * answered, whole: the memory scenario's per-stream floors (the bare proxy, and with `--relay`
 * each chunk passed through JavaScript) are those of proxies that do their job.
 */
import assert from "node:assert/strict";
import { startEmulator } from "../src/emulator/server.ts";
import { UPSTREAM_HEADERS } from "../bench/scenarios.ts";

const ROOT = new URL("../", import.meta.url).pathname;

/** Event names of an SSE body, in order. */
const eventNames = (text: string) => [...text.matchAll(/^event: (.*)$/gm)].map((m) => m[1]);

for (const relay of [false, true]) {
  Deno.test(`bench bare proxy${relay ? " --relay" : ""}: relays JSON and streams whole`, async () => {
    const emulator = startEmulator({ requiredKey: UPSTREAM_HEADERS["x-api-key"] });
    const upstream = `http://127.0.0.1:${emulator.addr.port}`;
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-net",
        `${ROOT}bench/bare_proxy.ts`,
        upstream,
        ...(relay ? ["--relay"] : []),
      ],
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    try {
      const { value } = await lines.read();
      const { port } = JSON.parse(value!.split("\n")[0]);
      const post = (base: string, body: unknown) =>
        fetch(`${base}/openai/v1/responses`, {
          method: "POST",
          headers: { "content-type": "application/json", ...UPSTREAM_HEADERS },
          body: JSON.stringify(body),
        });
      const proxy = `http://127.0.0.1:${port}`;

      const json = await post(proxy, { model: "gpt-5.4", input: "Say hi." });
      assert.equal(json.status, 200);
      assert.ok((await json.json()).usage.output_tokens > 0);

      // A long answer, many chunks: each one passes (through JavaScript with --relay).
      const ask = { model: "gpt-5.4", input: "[[emulate words=400]] Tell a story.", stream: true };
      const [direct, relayed] = await Promise.all([post(upstream, ask), post(proxy, ask)]);
      assert.equal(relayed.headers.get("content-type")?.startsWith("text/event-stream"), true);
      const [want, got] = await Promise.all([direct.text(), relayed.text()]);
      assert.deepEqual(eventNames(got), eventNames(want));
      assert.ok(eventNames(got).length > 400, "one delta per word at least");
      const text = (body: string) =>
        JSON.parse(/event: response\.completed\ndata: (.*)/.exec(body)![1]).response.output[0]
          .content[0].text;
      assert.equal(text(got), text(want), "the same answer, every byte of its text");
    } finally {
      child.kill("SIGKILL");
      await child.status;
      await lines.cancel().catch(() => {});
      await emulator.shutdown();
    }
  });
}
