/**
 * The canonical form → a Messages request for an Anthropic-type upstream (pure;
 * `anthropic-messages.md` §2–3, `translation.md`). Policies where the formats differ:
 * - system and developer text from anywhere in the conversation is hoisted into `system`, in order;
 * - tool results go first in the user turn after the call, all of them together; consecutive
 *   turns of one role are merged; empty text blocks are never sent; call ids are made acceptable
 *   to Anthropic (`tool_ids.ts`);
 * - thinking blocks are replayed only to the provider that signed them (see `opaque.ts`); when
 *   thinking is asked for but the turn being continued carries no signed thinking, or a tool is
 *   forced (`any`/`tool`), thinking is turned off for the call instead of failing;
 * - `temperature` is clamped to 0–1; with thinking on, temperature and top-p/top-k are not sent;
 * - JSON output without a schema is asked for in the system prompt (Messages needs a schema);
 * - records of hosted work are not sent; hosted tools other than web search are refused;
 * - a client's breakpoints (`cache_control`) go back on the blocks they were on (the system prompt
 *   then as blocks); a client whose protocol caches by itself gets the gateway's, at the stable
 *   prefix (`breakpoints.ts`), for an hour when it asked OpenAI's extended retention — unless the
 *   model's `cacheBreakpoints` is off;
 * - each of these adaptations is noted (see `translate/adaptations.ts`), as are image `detail`,
 *   file names and `strict` tools, which Messages has no field for.
 */
import { isObject } from "../../http/json.ts";
import {
  type Adapt,
  fieldOf,
  fileDetails,
  hostedRecords,
  laterSystem,
  unreplayed,
} from "../../translate/adaptations.ts";
import { inexpressible } from "../../translate/inexpressible.ts";
import type {
  AssistantPart,
  CanonicalRequest,
  FilePart,
  Json,
  Message,
  TextPart,
  ToolResultPart,
} from "../../translate/ir.ts";
import { replayable } from "../../translate/opaque.ts";
import { budgetFor } from "../../translate/reasoning.ts";
import { encodeSampling, requestEncoder } from "../../translate/sampling.ts";
import { anthropicToolId } from "../../translate/tool_ids.ts";
import { placedTtl } from "../../translate/prompt_cache.ts";
import { cacheControl, marked, withBreakpoints } from "./breakpoints.ts";

const PROTOCOL = "the Messages protocol";

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

/** A result: its text as one string, or blocks when it holds files or breakpoints. */
function encodeResult(part: ToolResultPart, field: string): Json {
  const texts = part.content.filter((p): p is TextPart => p.type === "text");
  const content = texts.length === part.content.length && !part.content.some((p) => p.cache)
    ? texts.map((p) => p.text).join("\n")
    : part.content.map((p) =>
      marked(
        p.type === "text" ? { type: "text", text: p.text || " " } : encodeFile(p, field),
        p.cache,
      )
    );
  return marked({
    type: "tool_result",
    tool_use_id: anthropicToolId(part.id),
    content,
    ...(part.isError ? { is_error: true } : {}),
  }, part.cache);
}

/** Assistant parts as blocks; opaque state only for `provider`'s own. */
function encodeAssistant(parts: AssistantPart[], provider: string): Json[] {
  const blocks: Json[] = [];
  for (const part of parts) {
    switch (part.type) {
      case "text":
        if (part.text) blocks.push(marked({ type: "text", text: part.text }, part.cache));
        break;
      case "reasoning":
        if (replayable(part.opaque, provider, "thinking-signature")) {
          blocks.push({ type: "thinking", thinking: part.text, signature: part.opaque!.value });
        } else if (replayable(part.opaque, provider, "redacted-thinking")) {
          blocks.push({ type: "redacted_thinking", data: part.opaque!.value });
        }
        break;
      case "tool-call":
        blocks.push(marked({
          type: "tool_use",
          id: anthropicToolId(part.id),
          name: part.name,
          input: isObject(part.input) ? part.input : { _raw: part.input },
        }, part.cache));
        break;
      case "hosted-call":
        break; // a record of hosted work: its results cannot be replayed here
    }
  }
  return blocks;
}

/** Appends a turn, merging it into the previous one of the same role. */
/**
 * `results` without those for a call that already has one in the turn (`turn`) or earlier in the
 * list: Anthropic takes one result per `tool_use` ("each tool_use must have a single result") —
 * a client that replays a result twice (Gemini CLI after `--resume`) would be refused. The first
 * stands; `differed` is told when a dropped one said something else.
 */
function oneResultEach(turn: Json[], results: Json[], differed: () => void): Json[] {
  const kept = new Map<unknown, string>();
  for (const block of turn) {
    if (block.type === "tool_result") kept.set(block.tool_use_id, JSON.stringify(block));
  }
  return results.filter((result) => {
    const text = JSON.stringify(result);
    const first = kept.get(result.tool_use_id);
    if (first === undefined) {
      kept.set(result.tool_use_id, text);
      return true;
    }
    if (first !== text) differed();
    return false;
  });
}

function pushTurn(turns: Json[], role: "user" | "assistant", blocks: Json[]): void {
  if (!blocks.length) return;
  const last = turns.at(-1);
  if (last?.role === role) (last.content as Json[]).push(...blocks);
  else turns.push({ role, content: blocks });
}

function encodeTools(request: CanonicalRequest, adapt: Adapt): Json[] {
  const tools: Json[] = request.tools.map((tool) => {
    if (tool.parameters.type !== "object") adapt("schema_cleaned", request.fields.tools);
    if (tool.strict) adapt("strict_dropped", request.fields.tools);
    return marked({
      name: tool.name,
      ...(tool.description ? { description: tool.description } : {}),
      input_schema: tool.parameters.type === "object"
        ? tool.parameters
        : { type: "object", properties: {} },
    }, tool.cache);
  });
  for (const hosted of request.hostedTools) {
    if (hosted.type !== "web_search") {
      throw inexpressible(hosted.field, `the hosted tool \`${hosted.name}\``, PROTOCOL);
    }
    tools.push(marked({
      type: "web_search_20250305",
      name: "web_search",
      ...(hosted.maxUses ? { max_uses: hosted.maxUses } : {}),
    }, hosted.cache));
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

/** What Messages does not take with thinking on, and what leaving each out is noted as. */
const DROPPED_WITH_THINKING = [
  ["temperature", "temperature_dropped"],
  ["topP", "top_p_dropped"],
  ["topK", "top_k_dropped"],
] as const;

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

/** Notes what the history loses on its way to `provider` (see `translate/adaptations.ts`). */
function noteHistory(request: CanonicalRequest, provider: string, adapt: Adapt): void {
  const field = request.fields.messages;
  if (laterSystem(request.messages)) adapt("system_hoisted", field);
  if (unreplayed(request.messages, provider, ["thinking-signature", "redacted-thinking"])) {
    adapt("reasoning_not_replayed", field);
  }
  if (hostedRecords(request.messages)) adapt("hosted_history_dropped", field);
  if (fileDetails(request.messages)) adapt("file_details_dropped", field);
}

/** A canonical request as a Messages body for `target`. */
export const encodeRequest = requestEncoder(PROTOCOL, (request, target, adapt) => {
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
              ? part.text ? [marked({ type: "text", text: part.text }, part.cache)] : []
              : [marked(encodeFile(part, request.fields.messages), part.cache)]
          ),
        );
        break;
      case "tool": {
        // Results go first in their user turn: before any text already merged into it.
        const last = turns.at(-1);
        const results = oneResultEach(
          last?.role === "user" ? last.content as Json[] : [],
          message.content.map((p) => encodeResult(p, request.fields.messages)),
          () => adapt("duplicate_result_dropped", request.fields.messages),
        );
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
    adapt("json_instructed", fieldOf(request, "responseFormat"));
  }
  noteHistory(request, target.provider, adapt);
  const body: Json = {
    model: target.model,
    messages: turns,
  };
  const systemText = system.map((p) => p.text).filter(Boolean).join("\n\n");
  // One string, unless the client set breakpoints in it: then its blocks, where they were.
  if (system.some((p) => p.cache)) {
    body.system = system.filter((p) => p.text).map((p) =>
      marked({ type: "text", text: p.text }, p.cache)
    );
  } else if (systemText) body.system = systemText;
  const forced = request.toolChoice?.type === "required" || request.toolChoice?.type === "tool";
  const reasoning = request.reasoning;
  const thinking = reasoning && !reasoning.off && !forced &&
    !unsignedToolLoop(request.messages, target.provider);
  const reasoningField = fieldOf(request, "reasoning");
  if (thinking) {
    const asked = reasoning.budgetTokens ?? budgetFor(reasoning.effort ?? "medium");
    let budget = asked;
    if (request.maxOutputTokens !== undefined) {
      budget = Math.min(budget, request.maxOutputTokens - 1);
    }
    if (budget >= 1024) body.thinking = { type: "enabled", budget_tokens: Math.max(1024, budget) };
    else adapt("thinking_off", reasoningField);
    if (budget >= 1024 && (budget !== asked || reasoning.budgetTokens === undefined)) {
      adapt("reasoning_approximated", reasoningField);
    }
  } else if (reasoning?.off) {
    body.thinking = { type: "disabled" };
  } else if (reasoning) adapt("thinking_off", reasoningField);
  // With thinking on, Messages takes no temperature, top-p or top-k; temperature is 0 to 1.
  const { temperature } = request;
  const thinkingOn = (body.thinking as Json | undefined)?.type === "enabled";
  if (thinkingOn) {
    for (const [member, kind] of DROPPED_WITH_THINKING) {
      if (request[member] !== undefined) adapt(kind, fieldOf(request, member));
    }
  } else if (temperature !== undefined && (temperature < 0 || temperature > 1)) {
    adapt("temperature_clamped", fieldOf(request, "temperature"));
  }
  encodeSampling(
    "messages",
    thinkingOn ? { ...request, temperature: undefined, topP: undefined, topK: undefined } : {
      ...request,
      temperature: temperature === undefined ? undefined : Math.min(1, Math.max(0, temperature)),
    },
    body,
    {},
    adapt,
    request,
  );
  if (request.tools.length || request.hostedTools.length) {
    body.tools = encodeTools(request, adapt);
  }
  const choice = encodeChoice(request);
  if (choice && body.tools) body.tool_choice = choice;
  if (request.responseFormat?.schema) {
    body.output_config = { format: { type: "json_schema", schema: request.responseFormat.schema } };
  }
  if (request.user) body.metadata = { user_id: request.user };
  if (request.stream) body.stream = true;
  const cache = request.cache;
  if (cache?.whole) body.cache_control = cacheControl(cache.whole);
  // A client whose protocol caches by itself gets the breakpoints Anthropic caches at.
  return cache?.implicit && target.cacheBreakpoints !== false
    ? withBreakpoints(body, placedTtl(cache))
    : body;
});
