/**
 * The files of `deploy/`: the systemd unit passes `systemd-analyze verify` (Debian package
 * `systemd`; skipped with a message without it) and keeps its hardening and limits; the example
 * config loads through the real loader with the compiled binary's permissions.
 */
import assert from "node:assert/strict";
import { runCli } from "./helpers/gateway.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const UNIT = `${ROOT}deploy/switchyard.service`;
const BINARY = "/usr/local/bin/switchyard";

function hasSystemdAnalyze(): boolean {
  try {
    return Deno.statSync("/usr/bin/systemd-analyze").isFile;
  } catch {
    return false;
  }
}

const systemd = hasSystemdAnalyze();
if (!systemd) {
  console.log(
    "deploy_test: systemd-analyze not found (Debian package systemd): unit check skipped",
  );
}

/** The unit's `Key=value` lines of section [Service]. */
function service(text: string): Map<string, string> {
  const out = new Map<string, string>();
  let section = "";
  for (const line of text.split("\n")) {
    const header = /^\[(\w+)\]$/.exec(line.trim());
    if (header) section = header[1];
    const pair = /^(\w+)=(.*)$/.exec(line.trim());
    if (pair && section === "Service") out.set(pair[1], pair[2]);
  }
  return out;
}

Deno.test({
  name: "the systemd unit passes systemd-analyze verify with no warning",
  ignore: !systemd,
  async fn() {
    const text = await Deno.readTextFile(UNIT);
    assert.ok(
      text.includes(`ExecStart=${BINARY} serve `),
      "the binary where the README installs it",
    );
    // verify checks that ExecStart's program exists: a copy names a stand-in executable, and
    // differs from the real file in that path only.
    const dir = await Deno.makeTempDir({ prefix: "switchyard-unit-" });
    try {
      const standIn = `${dir}/switchyard`;
      await Deno.writeTextFile(standIn, "#!/bin/sh\nexit 0\n", { mode: 0o755 });
      const copy = text.replaceAll(BINARY, standIn);
      assert.equal(copy.replaceAll(standIn, BINARY), text);
      await Deno.writeTextFile(`${dir}/switchyard.service`, copy);
      const out = await new Deno.Command("/usr/bin/systemd-analyze", {
        args: ["verify", `${dir}/switchyard.service`],
        stdout: "piped",
        stderr: "piped",
      }).output();
      const said = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
      assert.equal(out.code, 0, said);
      assert.equal(said.trim(), "", "no warning");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("the unit keeps its user, state directory, hardening and limits", async () => {
  const unit = service(await Deno.readTextFile(UNIT));
  const expect: Record<string, string> = {
    User: "switchyard",
    StateDirectory: "switchyard",
    WorkingDirectory: "/var/lib/switchyard",
    NoNewPrivileges: "yes",
    ProtectSystem: "strict",
    ProtectHome: "yes",
    PrivateTmp: "yes",
    KillSignal: "SIGTERM",
    ExecReload: "/bin/kill -HUP $MAINPID",
  };
  for (const [key, value] of Object.entries(expect)) assert.equal(unit.get(key), value, key);
  assert.ok(Number(unit.get("LimitNOFILE")) >= 65536, "room for many open streams");
  // The stop timeout outlasts the default drain (server.drainTimeoutMs, 30 s).
  assert.ok(Number(unit.get("TimeoutStopSec")) > 30);
  assert.match(unit.get("ExecStart")!, /--config \/etc\/switchyard\/switchyard\.json$/);
});

Deno.test("the example config loads with the binary's permissions", async () => {
  const dir = await Deno.makeTempDir({ prefix: "switchyard-deploy-" });
  try {
    await Deno.copyFile(`${ROOT}deploy/switchyard.json`, `${dir}/switchyard.json`);
    const result = await runCli(dir, ["config", "check", "--config", "./switchyard.json"], {
      SWITCHYARD_ADMIN_TOKEN: "an-admin-token-of-some-length",
    });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /config ok/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
