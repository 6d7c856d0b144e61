/**
 * Emulated Anthropic Messages API and its compatible vendors (`anthropic-messages.md`): the
 * message object, the named SSE stream (`message_start` → blocks → `message_delta` with cumulative
 * usage → `message_stop`, `ping` after the first block start), thinking blocks (`thinking_delta`
 * then one `signature_delta`, the signature an HMAC of the thinking text; `redacted_thinking` with
 * `[[emulate redacted=1]]`), `tool_use` with `input_json_delta` (steered by the prompt, see
 * `text.ts`), JSON following `output_config.format`, cache usage, count_tokens, the real API's
 * history checks (tool use/result pairing, empty text, tool ids, the first role, thinking
 * signatures and the thinking rules of tool loops), message threads (`anthropic_threads.ts`), and
 * errors in Anthropic's envelope (529 `overloaded_error` included).
 */
import { encodeSse } from "../http/sse.ts";
import {
  answer,
  collectText,
  countTokens,
  type Directives,
  directives,
  exampleValue,
  newId,
  pickTools,
  seal,
  sign,
  signed,
  sleep,
  sseBody,
  tokenize,
  toolArguments,
  unseal,
} from "./text.ts";
import { threadTurn, untilEnded } from "./anthropic_threads.ts";
import { type CacheContext, cacheScope, prefixes, type Segment, type Ttl } from "./prompt_cache.ts";

type Json = Record<string, unknown>;

const ERROR_TYPES: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  402: "billing_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  504: "timeout_error",
  529: "overloaded_error",
};

/** Anthropic's error envelope (`details`: its `error.details`, e.g. an `error_code`). */
export function anthropicError(status: number, message: string, details?: Json): Response {
  return Response.json({
    type: "error",
    error: { type: ERROR_TYPES[status] ?? "api_error", message, ...(details ? { details } : {}) },
    request_id: newId("req_", 24),
  }, { status, headers: status === 429 || status === 529 ? { "retry-after": "1" } : {} });
}

function fault(d: Directives): Response | undefined {
  if (d.context) return anthropicError(400, "prompt is too long: 215000 tokens > 200000 maximum");
  if (!d.status) return undefined;
  const message = d.status === 529 ? "Overloaded" : `Emulated error ${d.status}.`;
  return anthropicError(d.status, message);
}

interface Message {
  role: string;
  content: unknown;
}

function promptTexts(body: Json): string[] {
  return collectText([body.system, body.messages, body.tools]);
}

function lastUserText(messages: Message[]): string {
  const last = [...messages].reverse().find((m) => m.role === "user");
  if (!last) return "";
  if (Array.isArray(last.content)) {
    const result = (last.content as Json[]).find((b) => b.type === "tool_result");
    if (result) return `the tool returned ${collectText(result.content).join(" ")}`;
  }
  return collectText(last.content).join(" ");
}

/** The model families each vendor serves; others are unknown (404, as the real services answer). */
const VENDOR_MODELS: Record<string, RegExp> = {
  anthropic: /^claude-(opus|sonnet|haiku|3)/,
  deepseek: /^deepseek-/,
  moonshot: /^kimi-/,
  zhipu: /^glm-/,
};

function unknownModel(vendor: string, model: unknown): Response | undefined {
  if (typeof model !== "string" || VENDOR_MODELS[vendor]?.test(model) !== false) return undefined;
  return anthropicError(404, `model: ${model}`);
}

/** `POST /v1/messages/count_tokens`. */
export async function countTokensHandler(req: Request, vendor = "anthropic"): Promise<Response> {
  const body = await req.json() as Json;
  const d = directives(promptTexts(body));
  return fault(d) ?? unknownModel(vendor, body.model) ??
    Response.json({ input_tokens: inputTokens(body) });
}

/** Server tools the emulator runs: web search, one query per call. */
function serverTool(tools: Json[]): Json | undefined {
  return tools.find((t) => typeof t.type === "string" && t.type.startsWith("web_search_"));
}

function inputTokens(body: Json): number {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  return countTokens(promptTexts(body).join(" ")) + 4 * messages.length;
}

const THINKING = "Let me think about this request step by step.";

/** The prefix of the emulator's `redacted_thinking` data. */
const REDACTED = "EmwK";

/** What is wrong with the first empty or blank text block, if any. */
function emptyText(blocks: Json[]): string | undefined {
  for (const block of blocks) {
    if (block.type !== "text" || typeof block.text !== "string") continue;
    if (block.text === "") return "text content blocks must be non-empty";
    if (!block.text.trim()) return "text content blocks must contain non-whitespace text";
  }
  return undefined;
}

/** Tool choices that force a call. */
const FORCING = new Set(["any", "tool"]);

/**
 * Requests the real API rejects: a non-user first turn, empty text blocks, tool ids out of
 * pattern, a tool use not answered first thing in the next user turn, a result answering no use
 * of the turn before, thinking signatures (and redacted data) it did not issue, and — with
 * thinking on — a forced tool or a tool loop continued without its thinking block.
 */
function invalidHistory(body: Json, history: Message[], thinking: boolean): Response | undefined {
  const bad = (message: string) => anthropicError(400, message);
  const first = history.find((m) => m.role !== "system");
  if (first && first.role !== "user") {
    return bad('messages: first message must use the "user" role');
  }
  const blankSystem = Array.isArray(body.system) ? emptyText(body.system as Json[]) : undefined;
  if (blankSystem) return bad(`system: ${blankSystem}`);
  let pending: string[] = [];
  for (const [i, message] of history.entries()) {
    const final = i === history.length - 1 && message.role === "assistant";
    const blocks = Array.isArray(message.content)
      ? message.content as Json[]
      : final && message.content === ""
      ? []
      : [{ type: "text", text: message.content }];
    if (message.role === "user") {
      const results = blocks.filter((b) => b.type === "tool_result");
      const seen = new Set<string>();
      for (const [j, block] of blocks.entries()) {
        if (block.type !== "tool_result") continue;
        const id = String(block.tool_use_id);
        if (seen.has(id)) {
          return bad(
            `messages.${i}.content.${j}: each tool_use must have a single result. Found multiple \`tool_result\` blocks with id: ${id}`,
          );
        }
        seen.add(id);
      }
      for (const [j, block] of blocks.entries()) {
        if (block.type === "tool_result" && !pending.includes(String(block.tool_use_id))) {
          return bad(
            `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${
              String(block.tool_use_id)
            }. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
          );
        }
      }
      const answered = new Set(results.map((b) => String(b.tool_use_id)));
      const missing = pending.filter((id) => !answered.has(id));
      if (missing.length) {
        return bad(
          `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${
            missing.join(", ")
          }. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
        );
      }
      pending = [];
    } else if (message.role === "assistant") {
      if (pending.length) {
        return bad(
          `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${
            pending.join(", ")
          }. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
        );
      }
      for (const [j, block] of blocks.entries()) {
        if (block.type === "tool_use") {
          if (!/^[a-zA-Z0-9_-]+$/.test(String(block.id))) {
            return bad(
              `messages.${i}.content.${j}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'`,
            );
          }
          pending.push(String(block.id));
        }
        if (
          block.type === "thinking" && !signed("Eq", String(block.thinking ?? ""), block.signature)
        ) {
          return bad(`messages.${i}.content.${j}: Invalid \`signature\` in \`thinking\` block`);
        }
        if (block.type === "redacted_thinking" && unseal(REDACTED, block.data) === undefined) {
          return bad(`messages.${i}.content.${j}: Invalid \`data\` in \`redacted_thinking\` block`);
        }
      }
    }
    const blank = emptyText(blocks);
    if (blank) return bad(`messages: ${blank}`);
  }
  if (!thinking) return undefined;
  if (FORCING.has(String((body.tool_choice as Json | undefined)?.type))) {
    return bad("Thinking may not be enabled when tool_choice forces tool use.");
  }
  const lastAssistant = history.findLastIndex((m) => m.role === "assistant");
  const next = history[lastAssistant + 1]?.content;
  const continued = lastAssistant >= 0 && lastAssistant === history.length - 2 &&
    Array.isArray(next) && (next as Json[]).some((b) => b.type === "tool_result");
  const turn = history[lastAssistant]?.content;
  if (continued && Array.isArray(turn) && (turn as Json[]).some((b) => b.type === "tool_use")) {
    const first = (turn as Json[])[0];
    if (first?.type !== "thinking" && first?.type !== "redacted_thinking") {
      return bad(
        `messages.${lastAssistant}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${
          String(first?.type)
        }\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable \`thinking\`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking`,
      );
    }
  }
  return undefined;
}

/** The answer text: JSON for a structured-output request, else the echo. */
function answerText(body: Json, history: Message[], d: Directives): string {
  const format = (body.output_config as Json | undefined)?.format as Json | undefined;
  if (format?.type === "json_schema") return JSON.stringify(exampleValue(format.schema));
  return answer(lastUserText(history), d);
}

/** The smallest prefix a model caches (Anthropic's table; older and unknown models: 1,024). */
function minimumCached(model: string): number {
  if (/^claude-(opus-4-[5-9]|haiku-4-5)/.test(model)) return 4096;
  if (/^claude-(3-5-haiku|3-haiku|haiku-3)/.test(model)) return 2048;
  return 1024;
}

/** A block as the cache names it: without its `cache_control`. */
function blockSegment(block: unknown, tokens: number, role = ""): Segment {
  const { cache_control: control, ...rest } = (block ?? {}) as Json;
  const ttl = (control as Json | undefined)?.ttl === "1h" ? "1h" : "5m";
  return {
    text: `${role}${JSON.stringify(rest)}`,
    tokens,
    ...(control && typeof control === "object" ? { breakpoint: ttl as Ttl } : {}),
  };
}

const tokensOf = (value: unknown) => countTokens(collectText(value).join(" "));

/**
 * The prompt as Anthropic caches it: tools, then the system prompt, then each message (its 4
 * tokens of structure, then its blocks) — a top-level `cache_control` marks the last block.
 */
function cacheSegments(body: Json): Segment[] {
  const segments: Segment[] = [];
  for (const tool of Array.isArray(body.tools) ? body.tools : []) {
    segments.push(blockSegment(tool, tokensOf(tool)));
  }
  const system = body.system;
  if (typeof system === "string") segments.push({ text: system, tokens: countTokens(system) });
  else if (Array.isArray(system)) {
    for (const block of system) segments.push(blockSegment(block, tokensOf(block)));
  }
  for (const message of (Array.isArray(body.messages) ? body.messages : []) as Message[]) {
    segments.push({ text: message.role, tokens: 4 });
    const blocks = typeof message.content === "string"
      ? [{ type: "text", text: message.content }]
      : Array.isArray(message.content)
      ? message.content
      : [];
    for (const block of blocks) segments.push(blockSegment(block, tokensOf(block), message.role));
  }
  const control = body.cache_control as Json | undefined;
  if (control && typeof control === "object" && segments.length) {
    segments[segments.length - 1].breakpoint = control.ttl === "1h" ? "1h" : "5m";
  }
  return segments;
}

/**
 * What the prompt read from and wrote to the cache: as `[[emulate cached=N cache_write=N
 * cache_write_1h=N]]` say when the prompt says, else as the key's
 * cache holds it (see `prompt_cache.ts`) — Anthropic's only, not the compatible vendors'.
 */
function cacheUse(body: Json, d: Directives, total: number, cache?: CacheContext) {
  const directed = d.cached !== undefined || d.cacheWrite !== undefined ||
    d.cacheWrite1h !== undefined;
  if (directed || !cache) {
    const read = Math.min(d.cached ?? 0, total);
    // `cache_write` is written with the lifetime the system prompt asks for (5 minutes unless it
    // says `ttl: "1h"`), `cache_write_1h` for an hour whatever it asks.
    const oneHour = JSON.stringify(body.system ?? "").includes('"ttl":"1h"');
    const written1h = Math.min(
      (d.cacheWrite1h ?? 0) + (oneHour ? d.cacheWrite ?? 0 : 0),
      total - read,
    );
    const written5m = Math.min(oneHour ? 0 : d.cacheWrite ?? 0, total - read - written1h);
    return { read, written5m, written1h };
  }
  const model = String(body.model);
  const scope = cacheScope(cache.provider, cache.key, model);
  const use = cache.cache.breakpoints(
    scope,
    prefixes("", cacheSegments(body)),
    minimumCached(model),
  );
  // The segments add up to the count (it is additive): never more than the whole.
  const read = Math.min(use.read, total);
  const written5m = Math.min(use.written, total - read);
  return { read, written5m, written1h: Math.min(use.written1h, total - read - written5m) };
}

/**
 * `POST /v1/messages`. On `anthropic`, a `thread` is held as Anthropic holds it (see
 * `anthropic_threads.ts`); the compatible vendors ignore the field. `cache`: the prompt cache of
 * the request's key (Anthropic's only).
 */
export async function messages(
  req: Request,
  vendor = "anthropic",
  cache?: CacheContext,
): Promise<Response> {
  const sent = await req.json() as Json;
  const opened = vendor === "anthropic" ? threadTurn(req.headers, sent) : undefined;
  if (opened && "status" in opened) {
    return anthropicError(opened.status, opened.message, opened.details);
  }
  const turn = opened;
  const body = turn?.body ?? sent;
  const d = directives(promptTexts(body));
  await sleep(d.wait);
  const failure = fault(d);
  if (failure) return failure;
  if (typeof body.model !== "string" || typeof body.max_tokens !== "number") {
    return anthropicError(400, "model: Field required; max_tokens: Field required");
  }
  const unknown = unknownModel(vendor, body.model);
  if (unknown) return unknown;
  const history = (Array.isArray(body.messages) ? body.messages : []) as Message[];
  const total = inputTokens(body);
  const { read: cacheRead, written5m, written1h } = cacheUse(body, d, total, cache);
  const cacheWrite = written5m + written1h;
  const usageIn = {
    input_tokens: total - cacheRead - cacheWrite,
    cache_creation_input_tokens: cacheWrite,
    cache_read_input_tokens: cacheRead,
    cache_creation: {
      ephemeral_5m_input_tokens: written5m,
      ephemeral_1h_input_tokens: written1h,
    },
  };

  const thinking = (body.thinking as Json | undefined)?.type === "enabled" ||
    (body.thinking as Json | undefined)?.type === "adaptive";
  const allTools = Array.isArray(body.tools) ? body.tools as Json[] : [];
  const search = serverTool(allTools);
  const tools = allTools.filter((t) => t.type === undefined || t.type === "custom");
  const lastContent = history.at(-1)?.content;
  const answeredTool = Array.isArray(lastContent) &&
    (lastContent as Json[]).some((b) => b.type === "tool_result");
  const invalid = invalidHistory(body, history, thinking);
  if (invalid) return invalid;
  const choice = body.tool_choice as Json | undefined;
  const called = !answeredTool && choice?.type !== "none"
    ? pickTools(tools, (t) => String(t.name), d, {
      forced: choice?.type === "tool" ? choice.name as string | undefined : undefined,
      single: choice?.disable_parallel_tool_use === true,
    })
    : [];
  const tool = called[0];

  type Block = {
    block: Json;
    pieces: string[];
    kind: "thinking" | "redacted" | "text" | "tool_use" | "server_tool_use" | "result";
    /** Output tokens spent but not shown (redacted thinking). */
    hidden?: number;
  };
  const blocks: Block[] = [];
  let budget = body.max_tokens as number;
  let stopReason = "end_turn";
  const take = (pieces: string[]) => {
    if (pieces.length > budget) {
      stopReason = "max_tokens";
      pieces = pieces.slice(0, budget);
    }
    budget -= pieces.length;
    return pieces;
  };
  if (thinking && d.redacted) {
    // Redacted thinking: opaque data under the emulator's seal, no visible text.
    blocks.push({
      kind: "redacted",
      pieces: [],
      hidden: take(tokenize(THINKING)).length,
      block: { type: "redacted_thinking", data: seal(REDACTED, newId("", 32)) },
    });
  } else if (thinking) {
    const pieces = take(tokenize(THINKING));
    const text = pieces.join("");
    blocks.push({
      kind: "thinking",
      pieces,
      block: { type: "thinking", thinking: text, signature: sign("Eq", text) },
    });
  }
  if (search && !tool) {
    const query = lastUserText(history).replace(/\[\[emulate [^\]]*\]\]/g, "").trim();
    const input = JSON.stringify({ query: query.slice(0, 100) || "search" });
    const id = newId("srvtoolu_", 24);
    blocks.push({
      kind: "server_tool_use",
      pieces: take(tokenize(input)),
      block: { type: "server_tool_use", id, name: "web_search", input: JSON.parse(input) },
    });
    blocks.push({
      kind: "result",
      pieces: [],
      block: {
        type: "web_search_tool_result",
        tool_use_id: id,
        content: [{
          type: "web_search_result",
          url: "https://example.com/result",
          title: "An emulated result",
          encrypted_content: newId("Eu", 40),
          page_age: null,
        }],
      },
    });
  }
  for (const call of called) {
    const args = JSON.stringify(toolArguments(call.input_schema, d));
    const pieces = take(tokenize(args));
    if (stopReason !== "max_tokens") stopReason = "tool_use";
    blocks.push({
      kind: "tool_use",
      pieces,
      block: {
        type: "tool_use",
        id: newId("toolu_", 24),
        name: call.name,
        input: JSON.parse(args),
      },
    });
  }
  if (!tool && (budget > 0 || !thinking)) {
    const pieces = take(tokenize(answerText(body, history, d)));
    blocks.push({ kind: "text", pieces, block: { type: "text", text: pieces.join("") } });
  }
  const outputTokens = blocks.reduce((n, b) => n + b.pieces.length + (b.hidden ?? 0), 0);
  const id = newId("msg_01", 22);
  const message = {
    id,
    type: "message",
    role: "assistant",
    model: body.model,
    content: blocks.map((b) => b.block),
    stop_reason: stopReason,
    stop_sequence: null,
    usage: {
      ...usageIn,
      output_tokens: outputTokens,
      server_tool_use: search ? { web_search_requests: 1 } : null,
      service_tier: "standard",
    },
  };
  if (body.stream !== true) {
    turn?.answered(message);
    return Response.json(message);
  }
  turn?.begin();

  async function* events(): AsyncGenerator<string> {
    const ev = (type: string, payload: Json) =>
      encodeSse(JSON.stringify({ type, ...payload }), type);
    yield ev("message_start", {
      message: {
        ...message,
        content: [],
        stop_reason: null,
        usage: { ...usageIn, output_tokens: 1, service_tier: "standard" },
      },
    });
    for (const [index, b] of blocks.entries()) {
      const start = b.kind === "thinking"
        ? { type: "thinking", thinking: "", signature: "" }
        : b.kind === "tool_use" || b.kind === "server_tool_use"
        ? { ...b.block, input: {} }
        : b.kind === "result" || b.kind === "redacted"
        ? b.block
        : { type: "text", text: "" };
      yield ev("content_block_start", { index, content_block: start });
      if (index === 0) yield ev("ping", {});
      for (const piece of b.pieces) {
        const delta = b.kind === "thinking"
          ? { type: "thinking_delta", thinking: piece }
          : b.kind === "tool_use" || b.kind === "server_tool_use"
          ? { type: "input_json_delta", partial_json: piece }
          : { type: "text_delta", text: piece };
        yield ev("content_block_delta", { index, delta });
      }
      if (b.kind === "thinking") {
        yield ev("content_block_delta", {
          index,
          delta: { type: "signature_delta", signature: b.block.signature },
        });
      }
      yield ev("content_block_stop", { index });
    }
    // `[[emulate null_usage=1]]`: the input side of the final usage as nulls ("no update").
    const unchanged = (value: number) => d.nullUsage ? null : value;
    yield ev("message_delta", {
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: {
        input_tokens: unchanged(usageIn.input_tokens),
        cache_creation_input_tokens: unchanged(cacheWrite),
        cache_read_input_tokens: unchanged(cacheRead),
        output_tokens: outputTokens,
        ...(search ? { server_tool_use: { web_search_requests: 1 } } : {}),
      },
    });
    turn?.answered(message);
    yield ev("message_stop", {});
  }
  const stream = sseBody(events, d);
  return new Response(turn ? untilEnded(stream, turn) : stream, {
    headers: { "content-type": "text/event-stream; charset=utf-8" },
  });
}
