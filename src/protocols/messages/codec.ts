/**
 * Messages ⇄ canonical, for requests and whole answers (pure; `anthropic-messages.md` §2–4,
 * `translation.md`). Policies where the formats differ:
 * - system and developer text from anywhere in the conversation is hoisted into `system`, in order;
 * - tool results go first in the user turn after the call, all of them together; consecutive
 *   turns of one role are merged; empty text blocks are never sent;
 * - thinking blocks are replayed only to the provider that signed them (see `opaque.ts`); when
 *   thinking is asked for but the turn being continued carries no signed thinking, or a tool is
 *   forced (`any`/`tool`), thinking is turned off for the call instead of failing;
 * - `temperature` is clamped to 0–1; with thinking on, temperature and top-p/top-k are not sent;
 * - JSON output without a schema is asked for in the system prompt (Messages needs a schema).
 */
import type { AnswerInfo, RouteInfo, Target } from "../../translate/codec.ts";
import type {
  AssistantPart,
  CanonicalRequest,
  CanonicalResponse,
  FilePart,
  FunctionTool,
  HostedTool,
  Json,
  Message,
  Opaque,
  TextPart,
  ToolChoice,
  ToolResultPart,
} from "../../translate/ir.ts";
import { zeroUsage } from "../../translate/ir.ts";
import { decodeStopReason, encodeStopReason } from "./stop_reason.ts";
import { fromToken, readOpaque, replayable, signaturesOntoCalls } from "../../translate/opaque.ts";
import { budgetFor, effortFor, readEffort } from "../../translate/reasoning.ts";
import { anthropicToolId, newId, parseArguments } from "../../translate/tool_ids.ts";
import {
  invalid,
  isObject,
  list,
  object,
  optionalNumber,
  optionalString,
  string,
} from "../../http/json.ts";
import { inexpressible } from "../../translate/inexpressible.ts";
import { decodeSampling, encodeSampling, oneAnswer } from "../../translate/sampling.ts";
import { decodeTokenUsage, encodeTokenUsage } from "./token_usage.ts";

const PROTOCOL = "the Messages protocol";

/** Server tool types that have a canonical meaning, by prefix. */
const WEB_SEARCH = /^web_search_\d+$/;

// ---------------------------------------------------------------------------------------------
// Client request → canonical

/** A content string or block list as canonical text and file parts (user side). */
function userBlocks(
  content: unknown,
  field: string,
  out: { user: (TextPart | FilePart)[]; results: ToolResultPart[] },
): void {
  if (typeof content === "string") {
    if (content) out.user.push({ type: "text", text: content });
    return;
  }
  list(content, field).forEach((raw, i) => {
    const at = `${field}[${i}]`;
    const block = object(raw, at);
    switch (block.type) {
      case "text": {
        const text = string(block.text, `${at}.text`);
        if (text) out.user.push({ type: "text", text });
        return;
      }
      case "image":
      case "document":
        out.user.push(...mediaBlock(block, at));
        return;
      case "search_result":
        out.user.push({ type: "text", text: searchResultText(block) });
        return;
      case "tool_result":
        out.results.push(toolResult(block, at));
        return;
      default:
        throw inexpressible(`${at}.type`, `a \`${String(block.type)}\` block`, "another protocol");
    }
  });
}

function searchResultText(block: Json): string {
  const parts = Array.isArray(block.content) ? block.content : [];
  const body = parts.map((p) => (isObject(p) && typeof p.text === "string" ? p.text : "")).join(
    "\n",
  );
  return [block.title, block.source, body].filter((s) => typeof s === "string" && s).join("\n");
}

/** An image or document block as canonical parts. */
function mediaBlock(block: Json, at: string): (TextPart | FilePart)[] {
  const source = object(block.source, `${at}.source`);
  switch (source.type) {
    case "base64": {
      const mediaType = string(source.media_type, `${at}.source.media_type`);
      return [{
        type: "file",
        mediaType,
        data: { base64: string(source.data, `${at}.source.data`) },
        ...(typeof block.title === "string" ? { filename: block.title } : {}),
      }];
    }
    case "url":
      return [{
        type: "file",
        mediaType: block.type === "document" ? "application/pdf" : "image/*",
        data: { url: string(source.url, `${at}.source.url`) },
      }];
    case "text":
      return [{ type: "text", text: string(source.data, `${at}.source.data`) }];
    case "content": {
      const out = { user: [] as (TextPart | FilePart)[], results: [] as ToolResultPart[] };
      userBlocks(source.content, `${at}.source.content`, out);
      return out.user;
    }
    default:
      throw inexpressible(
        `${at}.source.type`,
        `a \`${String(source.type)}\` source (provider file ids are not portable)`,
        "another protocol",
      );
  }
}

function toolResult(block: Json, at: string): ToolResultPart {
  const id = string(block.tool_use_id, `${at}.tool_use_id`);
  const content: (TextPart | FilePart)[] = [];
  if (typeof block.content === "string") {
    content.push({ type: "text", text: block.content });
  } else {
    list(block.content, `${at}.content`).forEach((raw, j) => {
      const part = object(raw, `${at}.content[${j}]`);
      if (part.type === "text") {
        content.push({ type: "text", text: string(part.text, `${at}.content[${j}].text`) });
      } else if (part.type === "image" || part.type === "document") {
        content.push(...mediaBlock(part, `${at}.content[${j}]`));
      } else if (part.type === "search_result") {
        content.push({ type: "text", text: searchResultText(part) });
      } else if (part.type === "tool_reference" && typeof part.tool_name === "string") {
        // Claude Code's tool search: the named tool's definition is among `tools` already.
        content.push({ type: "text", text: `Tool ${part.tool_name} loaded.` });
      } else {
        throw inexpressible(
          `${at}.content[${j}].type`,
          `a \`${String(part.type)}\` block in a tool result`,
          "another protocol",
        );
      }
    });
  }
  return {
    type: "tool-result",
    id,
    content,
    ...(block.is_error === true ? { isError: true } : {}),
  };
}

/** An assistant turn's blocks as canonical parts. */
function assistantBlocks(content: unknown, field: string): AssistantPart[] {
  if (typeof content === "string") return content ? [{ type: "text", text: content }] : [];
  const parts: AssistantPart[] = [];
  list(content, field).forEach((raw, i) => {
    const at = `${field}[${i}]`;
    const block = object(raw, at);
    switch (block.type) {
      case "text": {
        const text = string(block.text, `${at}.text`);
        if (text) parts.push({ type: "text", text });
        return;
      }
      case "thinking": {
        const token = fromToken(block.signature);
        const opaque = token?.opaque ?? readOpaque(block.signature, "thinking-signature");
        parts.push({
          type: "reasoning",
          text: typeof block.thinking === "string" ? block.thinking : "",
          ...(opaque ? { opaque } : {}),
        });
        return;
      }
      case "redacted_thinking": {
        const opaque = readOpaque(block.data, "redacted-thinking");
        if (opaque) parts.push({ type: "reasoning", text: "", opaque });
        return;
      }
      case "tool_use":
        parts.push({
          type: "tool-call",
          id: string(block.id, `${at}.id`),
          name: string(block.name, `${at}.name`),
          input: parseArguments(block.input),
        });
        return;
      case "server_tool_use":
        if (block.name === "web_search") {
          parts.push({
            type: "hosted-call",
            tool: "web_search",
            id: typeof block.id === "string" ? block.id : "",
            ...(isObject(block.input) && typeof block.input.query === "string"
              ? { query: block.input.query }
              : {}),
          });
        }
        return;
      default:
        // Server tool results and other records of hosted work cannot be replayed elsewhere.
        if (typeof block.type === "string" && block.type.endsWith("_tool_result")) return;
        throw inexpressible(`${at}.type`, `a \`${String(block.type)}\` block`, "another protocol");
    }
  });
  return parts;
}

function systemText(value: unknown, field: string): TextPart[] {
  if (value === undefined || value === null) return [];
  if (typeof value === "string") return value ? [{ type: "text", text: value }] : [];
  return list(value, field).flatMap((raw, i) => {
    const block = object(raw, `${field}[${i}]`);
    const text = string(block.text, `${field}[${i}].text`);
    return text ? [{ type: "text" as const, text }] : [];
  });
}

function decodeTools(body: Json): { tools: FunctionTool[]; hosted: HostedTool[] } {
  const tools: FunctionTool[] = [];
  const hosted: HostedTool[] = [];
  list(body.tools, "tools").forEach((raw, i) => {
    const at = `tools[${i}]`;
    const tool = object(raw, at);
    const type = tool.type;
    if (type === undefined || type === null || type === "custom") {
      tools.push({
        name: string(tool.name, `${at}.name`),
        ...(typeof tool.description === "string" ? { description: tool.description } : {}),
        parameters: isObject(tool.input_schema) ? tool.input_schema : { type: "object" },
        ...(typeof tool.strict === "boolean" ? { strict: tool.strict } : {}),
      });
    } else if (typeof type === "string" && WEB_SEARCH.test(type)) {
      const maxUses = optionalNumber(tool.max_uses, `${at}.max_uses`);
      hosted.push({ type: "web_search", field: `${at}.type`, ...(maxUses ? { maxUses } : {}) });
    } else {
      hosted.push({ type: "other", field: `${at}.type`, name: String(type) });
    }
  });
  return { tools, hosted };
}

function decodeChoice(value: unknown): { choice?: ToolChoice; parallel?: boolean } {
  if (value === undefined || value === null) return {};
  const choice = object(value, "tool_choice");
  const parallel = choice.disable_parallel_tool_use === true ? false : undefined;
  switch (choice.type) {
    case "auto":
      return { choice: { type: "auto" }, parallel };
    case "any":
      return { choice: { type: "required" }, parallel };
    case "none":
      return { choice: { type: "none" } };
    case "tool":
      return {
        choice: { type: "tool", name: string(choice.name, "tool_choice.name") },
        parallel,
      };
    default:
      throw invalid("tool_choice.type", "must be auto, any, tool or none");
  }
}

/** A Messages request (validated by `schema.ts`) as canonical. */
export function decodeRequest(body: Json, _route: RouteInfo): CanonicalRequest {
  for (const field of ["container", "mcp_servers"]) {
    if (body[field] !== undefined && body[field] !== null) {
      throw inexpressible(field, `\`${field}\``, "another protocol");
    }
  }
  const system = systemText(body.system, "system");
  const messages: Message[] = [];
  list(body.messages, "messages").forEach((raw, i) => {
    const at = `messages[${i}]`;
    const message = object(raw, at);
    if (message.role === "assistant") {
      messages.push({
        role: "assistant",
        content: signaturesOntoCalls(assistantBlocks(message.content, `${at}.content`)),
      });
    } else if (message.role === "system") {
      messages.push({ role: "system", content: systemText(message.content, `${at}.content`) });
    } else {
      const out = { user: [] as (TextPart | FilePart)[], results: [] as ToolResultPart[] };
      userBlocks(message.content, `${at}.content`, out);
      if (out.results.length) messages.push({ role: "tool", content: out.results });
      if (out.user.length) messages.push({ role: "user", content: out.user });
    }
  });
  const { tools, hosted } = decodeTools(body);
  const { choice, parallel } = decodeChoice(body.tool_choice);
  const request: CanonicalRequest = {
    system,
    messages,
    tools,
    hostedTools: hosted,
    ...(choice ? { toolChoice: choice } : {}),
    ...(parallel === false ? { parallelToolCalls: false } : {}),
    stream: body.stream === true,
    fields: { messages: "messages", tools: "tools", stop: "stop_sequences" },
  };
  if (body.max_tokens === 0) {
    throw inexpressible("max_tokens", "`max_tokens: 0` (prompt-cache warming)", "another protocol");
  }
  decodeSampling("messages", body, request);
  const user = isObject(body.metadata)
    ? optionalString(body.metadata.user_id, "metadata.user_id")
    : undefined;
  if (user) request.user = user;
  const output = isObject(body.output_config) ? body.output_config : {};
  if (isObject(output.format)) {
    if (output.format.type !== "json_schema") {
      throw invalid("output_config.format.type", "must be json_schema");
    }
    request.responseFormat = {
      type: "json",
      ...(isObject(output.format.schema) ? { schema: output.format.schema } : {}),
    };
  }
  const thinking = isObject(body.thinking) ? body.thinking : undefined;
  const effort = readEffort(output.effort);
  if (thinking?.type === "enabled") {
    const budget = optionalNumber(thinking.budget_tokens, "thinking.budget_tokens");
    request.reasoning = {
      ...(budget ? { budgetTokens: budget, effort: effortFor(budget) } : {}),
      visible: thinking.display !== "omitted",
    };
  } else if (thinking?.type === "adaptive") {
    request.reasoning = {
      effort: effort && effort !== "none" ? effort : "medium",
      visible: thinking.display !== "omitted",
    };
  } else if (thinking?.type === "disabled") {
    request.reasoning = { off: true };
  } else if (effort) {
    request.reasoning = effort === "none" ? { off: true } : { effort };
  }
  return request;
}

// ---------------------------------------------------------------------------------------------
// Canonical → upstream request

const IMAGE_TYPES = new Set(["image/jpeg", "image/png", "image/gif", "image/webp"]);

function encodeFile(part: FilePart, field: string): Json {
  if (part.mediaType === "application/pdf") {
    return {
      type: "document",
      source: "url" in part.data
        ? { type: "url", url: part.data.url }
        : { type: "base64", media_type: "application/pdf", data: part.data.base64 },
    };
  }
  if (part.mediaType === "text/plain" && "base64" in part.data) {
    return {
      type: "document",
      source: { type: "text", media_type: "text/plain", data: atobText(part.data.base64) },
    };
  }
  if ("url" in part.data && part.mediaType.startsWith("image/")) {
    return { type: "image", source: { type: "url", url: part.data.url } };
  }
  if ("base64" in part.data && IMAGE_TYPES.has(part.mediaType)) {
    return {
      type: "image",
      source: { type: "base64", media_type: part.mediaType, data: part.data.base64 },
    };
  }
  throw inexpressible(field, `a \`${part.mediaType}\` file`, PROTOCOL);
}

function atobText(base64: string): string {
  try {
    return new TextDecoder().decode(Uint8Array.from(atob(base64), (c) => c.charCodeAt(0)));
  } catch {
    return "";
  }
}

function encodeResult(part: ToolResultPart, field: string): Json {
  const texts = part.content.filter((p): p is TextPart => p.type === "text");
  const content = texts.length === part.content.length
    ? texts.map((p) => p.text).join("\n")
    : part.content.map((p) =>
      p.type === "text" ? { type: "text", text: p.text || " " } : encodeFile(p, field)
    );
  return {
    type: "tool_result",
    tool_use_id: anthropicToolId(part.id),
    content,
    ...(part.isError ? { is_error: true } : {}),
  };
}

/** Assistant parts as blocks; opaque state only for `provider`'s own. */
function encodeAssistant(parts: AssistantPart[], provider: string): Json[] {
  const blocks: Json[] = [];
  for (const part of parts) {
    switch (part.type) {
      case "text":
        if (part.text) blocks.push({ type: "text", text: part.text });
        break;
      case "reasoning":
        if (replayable(part.opaque, provider, "thinking-signature")) {
          blocks.push({ type: "thinking", thinking: part.text, signature: part.opaque!.value });
        } else if (replayable(part.opaque, provider, "redacted-thinking")) {
          blocks.push({ type: "redacted_thinking", data: part.opaque!.value });
        }
        break;
      case "tool-call":
        blocks.push({
          type: "tool_use",
          id: anthropicToolId(part.id),
          name: part.name,
          input: isObject(part.input) ? part.input : { _raw: part.input },
        });
        break;
      case "hosted-call":
        break; // a record of hosted work: its results cannot be replayed here
    }
  }
  return blocks;
}

/** Appends a turn, merging it into the previous one of the same role. */
function pushTurn(turns: Json[], role: "user" | "assistant", blocks: Json[]): void {
  if (!blocks.length) return;
  const last = turns.at(-1);
  if (last?.role === role) (last.content as Json[]).push(...blocks);
  else turns.push({ role, content: blocks });
}

function encodeTools(request: CanonicalRequest): Json[] {
  const tools: Json[] = request.tools.map((tool) => ({
    name: tool.name,
    ...(tool.description ? { description: tool.description } : {}),
    input_schema: tool.parameters.type === "object"
      ? tool.parameters
      : { type: "object", properties: {} },
  }));
  for (const hosted of request.hostedTools) {
    if (hosted.type !== "web_search") {
      throw inexpressible(hosted.field, `the hosted tool \`${hosted.name}\``, PROTOCOL);
    }
    tools.push({
      type: "web_search_20250305",
      name: "web_search",
      ...(hosted.maxUses ? { max_uses: hosted.maxUses } : {}),
    });
  }
  return tools;
}

function encodeChoice(request: CanonicalRequest): Json | undefined {
  const choice = request.toolChoice;
  const noParallel = request.parallelToolCalls === false ? { disable_parallel_tool_use: true } : {};
  switch (choice?.type) {
    case undefined:
      return request.parallelToolCalls === false && request.tools.length
        ? { type: "auto", ...noParallel }
        : undefined;
    case "auto":
      return { type: "auto", ...noParallel };
    case "none":
      return { type: "none" };
    case "required":
      return { type: "any", ...noParallel };
    case "tool":
      return { type: "tool", name: choice.name, ...noParallel };
  }
}

/**
 * Whether the conversation continues a tool loop whose assistant turn carries no thinking this
 * provider signed (Messages then refuses thinking: the turn must start with a thinking block).
 */
function unsignedToolLoop(messages: Message[], provider: string): boolean {
  const last = messages.findLastIndex((m) => m.role === "assistant");
  if (last < 0 || messages.slice(last + 1).some((m) => m.role === "user")) return false;
  const turn = messages[last].content as AssistantPart[];
  if (!turn.some((p) => p.type === "tool-call")) return false;
  const first = turn.find((p) => p.type !== "text" || p.text);
  return !(first?.type === "reasoning" &&
    replayable(first.opaque, provider, "thinking-signature", "redacted-thinking"));
}

/** A canonical request as a Messages body for `target`. */
export function encodeRequest(request: CanonicalRequest, target: Target): Json {
  oneAnswer(request, PROTOCOL);
  const system = [...request.system];
  const turns: Json[] = [];
  request.messages.forEach((message) => {
    switch (message.role) {
      case "system":
        system.push(...message.content);
        break;
      case "user":
        pushTurn(
          turns,
          "user",
          message.content.flatMap((part) =>
            part.type === "text"
              ? part.text ? [{ type: "text", text: part.text }] : []
              : [encodeFile(part, request.fields.messages)]
          ),
        );
        break;
      case "tool": {
        // Results go first in their user turn: before any text already merged into it.
        const results = message.content.map((p) => encodeResult(p, request.fields.messages));
        const last = turns.at(-1);
        if (last?.role === "user") {
          const content = last.content as Json[];
          const firstOther = content.findIndex((b) => b.type !== "tool_result");
          content.splice(firstOther < 0 ? content.length : firstOther, 0, ...results);
        } else pushTurn(turns, "user", results);
        break;
      }
      case "assistant":
        pushTurn(turns, "assistant", encodeAssistant(message.content, target.provider));
        break;
    }
  });
  if (request.responseFormat && !request.responseFormat.schema) {
    system.push({ type: "text", text: "Respond with one JSON object and nothing else." });
  }
  const body: Json = {
    model: target.model,
    messages: turns,
  };
  const systemText = system.map((p) => p.text).filter(Boolean).join("\n\n");
  if (systemText) body.system = systemText;
  const forced = request.toolChoice?.type === "required" || request.toolChoice?.type === "tool";
  const reasoning = request.reasoning;
  const thinking = reasoning && !reasoning.off && !forced &&
    !unsignedToolLoop(request.messages, target.provider);
  if (thinking) {
    let budget = reasoning.budgetTokens ?? budgetFor(reasoning.effort ?? "medium");
    if (request.maxOutputTokens !== undefined) {
      budget = Math.min(budget, request.maxOutputTokens - 1);
    }
    if (budget >= 1024) body.thinking = { type: "enabled", budget_tokens: Math.max(1024, budget) };
  } else if (reasoning?.off) {
    body.thinking = { type: "disabled" };
  }
  // With thinking on, Messages takes no temperature, top-p or top-k; temperature is 0 to 1.
  const { temperature, maxOutputTokens, stop } = request;
  encodeSampling(
    "messages",
    (body.thinking as Json | undefined)?.type === "enabled" ? { maxOutputTokens, stop } : {
      ...request,
      temperature: temperature === undefined ? undefined : Math.min(1, Math.max(0, temperature)),
    },
    body,
  );
  if (request.tools.length || request.hostedTools.length) body.tools = encodeTools(request);
  const choice = encodeChoice(request);
  if (choice && body.tools) body.tool_choice = choice;
  if (request.responseFormat?.schema) {
    body.output_config = { format: { type: "json_schema", schema: request.responseFormat.schema } };
  }
  if (request.user) body.metadata = { user_id: request.user };
  if (request.stream) body.stream = true;
  return body;
}

// ---------------------------------------------------------------------------------------------
// Upstream answer → canonical

/** A whole Messages answer as canonical; opaque state is tagged with `provider`. */
export function decodeResponse(body: Json, provider: string): CanonicalResponse {
  const content: AssistantPart[] = [];
  for (const raw of Array.isArray(body.content) ? body.content : []) {
    if (!isObject(raw)) continue;
    const block = raw;
    if (block.type === "text" && typeof block.text === "string") {
      content.push({ type: "text", text: block.text });
    } else if (block.type === "thinking") {
      content.push({
        type: "reasoning",
        text: typeof block.thinking === "string" ? block.thinking : "",
        ...(typeof block.signature === "string" && block.signature
          ? { opaque: { provider, kind: "thinking-signature", value: block.signature } as Opaque }
          : {}),
      });
    } else if (block.type === "redacted_thinking" && typeof block.data === "string") {
      content.push({
        type: "reasoning",
        text: "",
        opaque: { provider, kind: "redacted-thinking", value: block.data },
      });
    } else if (block.type === "tool_use") {
      content.push({
        type: "tool-call",
        id: String(block.id ?? ""),
        name: String(block.name ?? ""),
        input: parseArguments(block.input),
      });
    } else if (block.type === "server_tool_use" && block.name === "web_search") {
      content.push({
        type: "hosted-call",
        tool: "web_search",
        id: String(block.id ?? ""),
        ...(isObject(block.input) && typeof block.input.query === "string"
          ? { query: block.input.query }
          : {}),
      });
    }
  }
  return {
    id: typeof body.id === "string" ? body.id : "",
    model: typeof body.model === "string" ? body.model : "",
    content,
    finish: {
      reason: decodeStopReason(body.stop_reason),
      ...(typeof body.stop_reason === "string" ? { raw: body.stop_reason } : {}),
    },
    usage: isObject(body.usage) ? decodeTokenUsage(body.usage) : zeroUsage(),
  };
}

// ---------------------------------------------------------------------------------------------
// Canonical → client answer

/** A thinking block carrying a token for opaque state of another protocol. */
export function tokenThinking(info: AnswerInfo, text: string, opaque?: Opaque): Json {
  return {
    type: "thinking",
    thinking: text,
    signature: info.token(opaque ?? { provider: "", kind: "thinking-signature", value: "" }, text),
  };
}

/** A canonical answer as a Messages `message`. */
export function encodeResponse(response: CanonicalResponse, info: AnswerInfo): Json {
  const content: Json[] = [];
  for (const part of response.content) {
    switch (part.type) {
      case "text":
        if (part.text) content.push({ type: "text", text: part.text });
        break;
      case "reasoning":
        content.push(tokenThinking(info, part.text, part.opaque));
        break;
      case "tool-call":
        if (part.opaque) content.push(tokenThinking(info, "", part.opaque));
        content.push({
          type: "tool_use",
          id: part.id,
          name: part.name,
          input: isObject(part.input) ? part.input : {},
        });
        break;
      case "hosted-call": {
        const id = part.id || newId("srvtoolu_");
        content.push(
          { type: "server_tool_use", id, name: "web_search", input: { query: part.query ?? "" } },
          { type: "web_search_tool_result", tool_use_id: id, content: [] },
        );
        break;
      }
    }
  }
  return {
    id: info.id,
    type: "message",
    role: "assistant",
    model: info.model,
    content,
    stop_reason: encodeStopReason(response.finish.reason),
    stop_sequence: null,
    usage: encodeTokenUsage(response.usage),
  };
}
