/**
 * A Messages request → the canonical form (pure; `anthropic-messages.md` §2–3, `translation.md`).
 * Policies where the formats differ:
 * - tool results in a user turn become a tool message before the rest of the turn;
 * - thinking blocks keep their signature as opaque state (a token's, or a native one with no
 *   provider, never replayed across); a Gemini signature that rode on an empty thinking block just
 *   before a call goes back onto the call; records of server tools' results are passed over;
 * - `thinking` (enabled with a budget, adaptive, disabled) and `output_config.effort` are the
 *   canonical reasoning; `output_config.format` is structured output;
 * - breakpoints (`cache_control` on blocks, tools, the system prompt's blocks, and the top-level
 *   one) are read with their lifetime (`breakpoints.ts`); tool and output schemas have their
 *   keywords in one order (`translate/schema_order.ts`);
 * - search results and tool references (Claude Code's tool search) are read as text; a container,
 *   MCP servers, file ids and `max_tokens: 0` (prompt-cache warming) are refused by name;
 * - what is carried only approximately — search results and tool references as text, a web
 *   search's domain and location options (not carried), adaptive thinking without an effort (as
 *   a medium effort) — is noted as adaptations (see `translate/adaptations.ts`).
 */
import {
  eachObject,
  invalid,
  isObject,
  object,
  optionalNumber,
  optionalString,
  string,
} from "../../http/json.ts";
import { type Adapt, IGNORED } from "../../translate/adaptations.ts";
import type { RouteInfo } from "../../translate/codec.ts";
import { inexpressible } from "../../translate/inexpressible.ts";
import type {
  AssistantPart,
  CacheMark,
  CanonicalRequest,
  FilePart,
  FunctionTool,
  HostedTool,
  Json,
  Message,
  TextPart,
  ToolChoice,
  ToolResultPart,
} from "../../translate/ir.ts";
import { fromToken, readOpaque, signaturesOntoCalls } from "../../translate/opaque.ts";
import { effortFor, readEffort } from "../../translate/reasoning.ts";
import { decodeSampling } from "../../translate/sampling.ts";
import { parseArguments } from "../../translate/tool_ids.ts";
import { readMark } from "./breakpoints.ts";
import { webSearchCall } from "./decode_response.ts";

/** Server tool types that have a canonical meaning, by prefix. */
const WEB_SEARCH = /^web_search_\d+$/;

/** A block's breakpoint (`cache_control`), as a member of the part it becomes. */
function markOf(block: Json, at: string): { cache?: CacheMark } {
  const cache = readMark(block.cache_control, `${at}.cache_control`);
  return cache ? { cache } : {};
}

/** `parts` with the block's breakpoint on the last of them (where the block ended). */
function markLast<T extends { cache?: CacheMark }>(parts: T[], block: Json, at: string): T[] {
  const mark = markOf(block, at);
  if (!mark.cache || !parts.length) return parts;
  return [...parts.slice(0, -1), { ...parts.at(-1)!, ...mark }];
}

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
  eachObject(content, field, (block, at) => {
    switch (block.type) {
      case "text": {
        const text = string(block.text, `${at}.text`);
        if (text) out.user.push({ type: "text", text, ...markOf(block, at) });
        return;
      }
      case "image":
      case "document":
        out.user.push(...markLast(mediaBlock(block, at), block, at));
        return;
      case "search_result":
        out.user.push({ type: "text", text: searchResultText(block), ...markOf(block, at) });
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
    eachObject(block.content, `${at}.content`, (part, where) => {
      if (part.type === "text") {
        content.push({
          type: "text",
          text: string(part.text, `${where}.text`),
          ...markOf(part, where),
        });
      } else if (part.type === "image" || part.type === "document") {
        content.push(...markLast(mediaBlock(part, where), part, where));
      } else if (part.type === "search_result") {
        content.push({ type: "text", text: searchResultText(part), ...markOf(part, where) });
      } else if (part.type === "tool_reference" && typeof part.tool_name === "string") {
        // Claude Code's tool search: the named tool's definition is among `tools` already.
        content.push({ type: "text", text: `Tool ${part.tool_name} loaded.` });
      } else {
        throw inexpressible(
          `${where}.type`,
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
    ...markOf(block, at),
  };
}

/** An assistant turn's blocks as canonical parts. */
function assistantBlocks(content: unknown, field: string): AssistantPart[] {
  if (typeof content === "string") return content ? [{ type: "text", text: content }] : [];
  const parts: AssistantPart[] = [];
  eachObject(content, field, (block, at) => {
    switch (block.type) {
      case "text": {
        const text = string(block.text, `${at}.text`);
        if (text) parts.push({ type: "text", text, ...markOf(block, at) });
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
          ...markOf(block, at),
        });
        return;
      case "server_tool_use":
        if (block.name === "web_search") {
          parts.push(webSearchCall(block, typeof block.id === "string" ? block.id : ""));
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
  return eachObject(value, field, (block, at) => {
    const text = string(block.text, `${at}.text`);
    return text ? [{ type: "text" as const, text, ...markOf(block, at) }] : [];
  }).flat();
}

function decodeTools(body: Json): { tools: FunctionTool[]; hosted: HostedTool[] } {
  const tools: FunctionTool[] = [];
  const hosted: HostedTool[] = [];
  eachObject(body.tools, "tools", (tool, at) => {
    const type = tool.type;
    if (type === undefined || type === null || type === "custom") {
      tools.push({
        name: string(tool.name, `${at}.name`),
        ...(typeof tool.description === "string" ? { description: tool.description } : {}),
        parameters: isObject(tool.input_schema) ? tool.input_schema : { type: "object" },
        ...(typeof tool.strict === "boolean" ? { strict: tool.strict } : {}),
        ...markOf(tool, at),
      });
    } else if (typeof type === "string" && WEB_SEARCH.test(type)) {
      const maxUses = optionalNumber(tool.max_uses, `${at}.max_uses`);
      hosted.push({
        type: "web_search",
        field: `${at}.type`,
        ...(maxUses ? { maxUses } : {}),
        ...markOf(tool, at),
      });
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

/** Whether blocks of `content` (a tool result's too) are search results or tool references. */
function readAsText(content: unknown): boolean {
  return Array.isArray(content) && content.some((block) =>
    isObject(block) &&
    (block.type === "search_result" || block.type === "tool_reference" ||
      (block.type === "tool_result" && readAsText(block.content)))
  );
}

/** Notes what `body` carries only approximately (see the module's doc). */
function noteApproximate(body: Json, adapt: Adapt): void {
  if (Array.isArray(body.messages)) {
    const at = body.messages.findIndex((m) => isObject(m) && readAsText(m.content));
    if (at >= 0) adapt("content_as_text", `messages[${at}].content`);
  }
  if (!Array.isArray(body.tools)) return;
  body.tools.forEach((tool, i) => {
    if (!isObject(tool) || typeof tool.type !== "string" || !WEB_SEARCH.test(tool.type)) return;
    for (const option of ["allowed_domains", "blocked_domains", "user_location"]) {
      if (tool[option] !== undefined && tool[option] !== null) {
        adapt("search_options_dropped", `tools[${i}].${option}`);
        return;
      }
    }
  });
}

/** A Messages request (validated by `schema.ts`) as canonical. */
export function decodeRequest(
  body: Json,
  _route: RouteInfo,
  adapt: Adapt = IGNORED,
): CanonicalRequest {
  for (const field of ["container", "mcp_servers"]) {
    if (body[field] !== undefined && body[field] !== null) {
      throw inexpressible(field, `\`${field}\``, "another protocol");
    }
  }
  const system = systemText(body.system, "system");
  const messages: Message[] = [];
  eachObject(body.messages, "messages", (message, at) => {
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
  if (parallel === false) {
    request.fields.parallelToolCalls = "tool_choice.disable_parallel_tool_use";
  }
  const whole = readMark(body.cache_control, "cache_control");
  if (whole) request.cache = { whole };
  noteApproximate(body, adapt);
  if (body.max_tokens === 0) {
    throw inexpressible("max_tokens", "`max_tokens: 0` (prompt-cache warming)", "another protocol");
  }
  decodeSampling("messages", body, request);
  const user = isObject(body.metadata)
    ? optionalString(body.metadata.user_id, "metadata.user_id")
    : undefined;
  if (user) {
    request.user = user;
    request.fields.user = "metadata.user_id";
  }
  const output = isObject(body.output_config) ? body.output_config : {};
  if (isObject(output.format)) {
    if (output.format.type !== "json_schema") {
      throw invalid("output_config.format.type", "must be json_schema");
    }
    request.responseFormat = {
      type: "json",
      ...(isObject(output.format.schema) ? { schema: output.format.schema } : {}),
    };
    request.fields.responseFormat = "output_config.format";
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
    if (!effort || effort === "none") adapt("reasoning_approximated", "thinking");
    request.reasoning = {
      effort: effort && effort !== "none" ? effort : "medium",
      visible: thinking.display !== "omitted",
    };
  } else if (thinking?.type === "disabled") {
    request.reasoning = { off: true };
  } else if (effort) {
    request.reasoning = effort === "none" ? { off: true } : { effort };
  }
  if (request.reasoning) request.fields.reasoning = thinking ? "thinking" : "output_config.effort";
  return request;
}
