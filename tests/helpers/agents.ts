/**
 * The real agents — Claude Code (Messages), Codex (Responses) and Gemini CLI (generateContent) —
 * pinned, installed from npm on first use into `$SWITCHYARD_AGENTS_DIR` (default
 * `~/.cache/switchyard-agents`), and run headless against a gateway, one prompt a run: a fresh
 * one, or the next turn of a session the agent keeps on disk (in its `home`) and resumes.
 */

/** The agents, pinned. */
export const AGENTS = {
  "@anthropic-ai/claude-code": "2.1.330",
  "@openai/codex": "0.169.0",
  "@google/gemini-cli": "0.61.0",
};

const DIR = Deno.env.get("SWITCHYARD_AGENTS_DIR") ??
  `${Deno.env.get("HOME") ?? "/tmp"}/.cache/switchyard-agents`;
const BIN = `${DIR}/node_modules/.bin`;

/** Installs the pinned agents with npm, unless they already are. */
export async function install(): Promise<void> {
  const manifest = JSON.stringify({ private: true, dependencies: AGENTS }, null, 2);
  let current = "";
  try {
    current = await Deno.readTextFile(`${DIR}/package.json`);
  } catch { /* first run */ }
  const present = await Promise.all(
    ["claude", "codex", "gemini"].map((bin) =>
      Deno.stat(`${BIN}/${bin}`).then(() => true, () => false)
    ),
  );
  if (current === manifest && present.every(Boolean)) return;
  await Deno.mkdir(DIR, { recursive: true });
  await Deno.writeTextFile(`${DIR}/package.json`, manifest);
  const out = await new Deno.Command("npm", {
    args: ["install", "--no-audit", "--no-fund", "--loglevel=error"],
    cwd: DIR,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`npm install of the agents failed:\n${new TextDecoder().decode(out.stderr)}`);
  }
}

/** How one run of an agent ended: its exit code, and its stdout then stderr. */
export interface Run {
  code: number;
  out: string;
}

/** Runs the installed agent `command` with `args` in `cwd`, with `env` alone (150 s at most). */
export async function run(
  command: string,
  args: string[],
  env: Record<string, string>,
  cwd: string,
): Promise<Run> {
  const child = new Deno.Command(`${BIN}/${command}`, {
    args,
    cwd,
    env: {
      PATH: `${BIN}:${Deno.env.get("PATH") ?? "/usr/bin:/bin"}`,
      NO_COLOR: "1",
      CI: "1",
      ...env,
    },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const timer = setTimeout(() => child.kill("SIGKILL"), 150_000);
  const out = await child.output();
  clearTimeout(timer);
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, out: `${decode(out.stdout)}\n${decode(out.stderr)}` };
}

/**
 * A session an agent run belongs to: its id (a UUID; Codex names its sessions itself and ignores
 * it), and whether a run before this one started it (then this run resumes it).
 */
export interface AgentSession {
  id: string;
  resume: boolean;
}

/** An agent, as the tests run it. */
export interface Agent {
  name: string;
  /** The test catalog's model of its own family. */
  native: string;
  /**
   * Runs the agent on `model` with `prompt` in `cwd`, with its home in `home` (fresh, or the
   * home of the session's earlier runs): a run of its own, or the next turn of `session`.
   */
  run(
    model: string,
    prompt: string,
    key: string,
    cwd: string,
    home: string,
    session?: AgentSession,
  ): Promise<Run>;
  /** The agent's tool that reads a file, as an emulator directive. */
  readDirective(path: string): string;
  /** Its calls go over a WebSocket (each turn a request id `<upgrade>.<n>`). */
  webSocket?: boolean;
}

/** Claude Code on the gateway at `url` as its Anthropic API (a session by `--session-id`). */
export function claudeCode(url: string): Agent {
  return {
    name: "Claude Code",
    native: "claude-test",
    run: (model, prompt, key, cwd, home, session) =>
      run("claude", [
        "-p",
        prompt,
        "--model",
        model,
        "--output-format",
        "json",
        "--allowedTools",
        "Read",
        ...(session ? [session.resume ? "--resume" : "--session-id", session.id] : []),
      ], {
        HOME: home,
        ANTHROPIC_BASE_URL: url,
        ANTHROPIC_API_KEY: key,
        ANTHROPIC_SMALL_FAST_MODEL: model,
        ANTHROPIC_DEFAULT_HAIKU_MODEL: model,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        DISABLE_AUTOUPDATER: "1",
      }, cwd),
    readDirective: (path) => `[[emulate tool=Read arg.file_path=${path}]]`,
  };
}

/**
 * Codex on the gateway at `url` as a Responses provider, over HTTP or (`webSocket`) over a
 * WebSocket; a session's later turns resume the latest session of its home (`exec resume --last`).
 */
export function codex(url: string, name: string, webSocket: boolean): Agent {
  const provider = `{name="gw",base_url="${url}/v1",env_key="SWITCHYARD_KEY",` +
    `wire_api="responses",supports_websockets=${webSocket}}`;
  return {
    name,
    native: "gpt-test",
    webSocket,
    run: (model, prompt, key, cwd, home, session) =>
      run(
        "codex",
        [
          "exec",
          ...(session?.resume ? ["resume", "--last"] : []),
          "--skip-git-repo-check",
          "--dangerously-bypass-approvals-and-sandbox",
          "-c",
          `model_providers.gw=${provider}`,
          "-c",
          "model_provider=gw",
          "-m",
          model,
          prompt,
        ],
        { HOME: home, CODEX_HOME: home, SWITCHYARD_KEY: key },
        cwd,
      ),
    // No spaces in a directive value: the shell reads the file by redirection.
    readDirective: (path) => `[[emulate tool=exec_command arg.cmd=cat<${path}]]`,
  };
}

/**
 * Gemini CLI on the gateway at `url` as its Gemini API (a session by `--session-id`; its later
 * turns resume the latest session of the project).
 */
export function geminiCli(url: string): Agent {
  return {
    name: "Gemini CLI",
    native: "gemini-test",
    async run(model, prompt, key, cwd, home, session) {
      await Deno.mkdir(`${home}/.gemini`, { recursive: true });
      await Deno.writeTextFile(
        `${home}/.gemini/settings.json`,
        JSON.stringify({ security: { auth: { selectedType: "gemini-api-key" } } }),
      );
      const continued = session
        ? session.resume ? ["--resume", "latest"] : ["--session-id", session.id]
        : [];
      return await run("gemini", ["-m", model, ...continued, "-p", prompt], {
        HOME: home,
        GEMINI_API_KEY: key,
        GOOGLE_GEMINI_BASE_URL: url,
        GEMINI_CLI_TRUST_WORKSPACE: "true",
      }, cwd);
    },
    readDirective: (path) => `[[emulate tool=read_file arg.file_path=${path}]]`,
  };
}
