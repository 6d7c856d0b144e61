/**
 * The canonical form → a Responses request for an OpenAI or xAI upstream (pure;
 * `openai-responses.md` §1–3, `translation.md`). Policies where the formats differ:
 * - calls go upstream stateless: `store: false` with `include: ["reasoning.encrypted_content"]`,
 *   so reasoning travels in the items themselves and is replayed only to the provider that
 *   encrypted it (never forged, dropped elsewhere); hosted web search records are never sent (an
 *   OpenAI item id cannot be forged);
 * - system messages inside the conversation are sent as `developer` items;
 * - Responses has no stop sequences (refused by name); `top_k`, `seed`, the penalties and
 *   `text.verbosity` are sampling hints with no field here and are not sent;
 *   `max_output_tokens` is at least 16; a user id longer than `safety_identifier` allows (64) is
 *   sent as a stable hash of it;
 * - a tool result marked as an error is sent as text starting with `Error:` (Responses has no
 *   error flag); a file sent inline gets a name (Responses requires one);
 * - the prompt cache is the upstream's own: a client's `prompt_cache_key` goes with the call, and
 *   its `prompt_cache_retention` to OpenAI (xAI documents none); breakpoints (and their
 *   lifetimes) are not sent — not an adaptation, the answer is the same
 *   (`translate/prompt_cache.ts`);
 * - each adaptation is noted (see `translate/adaptations.ts`), with a web search's `maxUses`, a
 *   reasoning budget sent as its nearest effort and reasoning turned off, which have no field.
 */
import {
  type Adapt,
  failedResults,
  fieldOf,
  hostedRecords,
  unreplayed,
} from "../../translate/adaptations.ts";
import { customInput } from "../../translate/custom_tools.ts";
import { dataUrl } from "../../translate/data_url.ts";
import { inexpressible } from "../../translate/inexpressible.ts";
import type {
  AssistantPart,
  CanonicalRequest,
  FilePart,
  FunctionTool,
  Json,
  TextPart,
  ToolCallPart,
  ToolResultPart,
} from "../../translate/ir.ts";
import { replayable } from "../../translate/opaque.ts";
import { effortFor } from "../../translate/reasoning.ts";
import { encodeSampling, requestEncoder } from "../../translate/sampling.ts";
import { shortHash, stringifyArguments } from "../../translate/tool_ids.ts";
import { defaultFilename } from "./file_types.ts";

const PROTOCOL = "the Responses protocol";

/** A user-side part as a Responses content part. */
function inputPart(part: TextPart | FilePart, field: string): Json {
  if (part.type === "text") return { type: "input_text", text: part.text };
  if (part.mediaType.startsWith("audio/")) throw inexpressible(field, "audio input", PROTOCOL);
  if (part.mediaType.startsWith("image/")) {
    return { type: "input_image", image_url: dataUrl(part), detail: part.detail ?? "auto" };
  }
  if ("url" in part.data) return { type: "input_file", file_url: part.data.url };
  return {
    type: "input_file",
    file_data: dataUrl(part),
    filename: part.filename ?? defaultFilename(part.mediaType),
  };
}

/** A tool result's output: its text, or a list of parts when it holds files. */
function resultOutput(part: ToolResultPart, field: string): string | Json[] {
  const texts = part.content.filter((c): c is TextPart => c.type === "text");
  if (texts.length === part.content.length) {
    const text = texts.map((c) => c.text).join("\n");
    if (!part.isError || /^error\b/i.test(text)) return text;
    return text ? `Error: ${text}` : "Error";
  }
  const parts = part.content.map((c) => inputPart(c, field));
  return part.isError ? [{ type: "input_text", text: "Error:" }, ...parts] : parts;
}

/** A call as a `function_call` or `custom_tool_call` input item. */
function callInput(part: ToolCallPart): Json {
  if (part.kind === "custom") {
    return {
      type: "custom_tool_call",
      call_id: part.id,
      name: part.name,
      input: customInput(part.input),
    };
  }
  return {
    type: "function_call",
    call_id: part.id,
    name: part.name,
    arguments: stringifyArguments(part.input),
  };
}

/** An assistant turn as items; reasoning only when `provider` encrypted it. */
function assistantItems(content: AssistantPart[], provider: string): Json[] {
  const items: Json[] = [];
  let message: Json[] | null = null;
  for (const part of content) {
    if (part.type === "text") {
      if (!part.text) continue;
      if (!message) {
        message = [];
        items.push({ type: "message", role: "assistant", content: message });
      }
      message.push({ type: "output_text", text: part.text });
      continue;
    }
    message = null;
    if (part.type === "reasoning") {
      if (!replayable(part.opaque, provider, "encrypted-reasoning")) continue;
      const opaque = part.opaque!;
      items.push({
        type: "reasoning",
        ...(opaque.itemId ? { id: opaque.itemId } : {}),
        summary: part.text ? [{ type: "summary_text", text: part.text }] : [],
        encrypted_content: opaque.value,
      });
    } else if (part.type === "tool-call") items.push(callInput(part));
    // A hosted call's record cannot be replayed: its item id would be forged.
  }
  return items;
}

function encodeInput(request: CanonicalRequest, provider: string): Json[] {
  const field = request.fields.messages;
  const items: Json[] = [];
  for (const message of request.messages) {
    switch (message.role) {
      case "system":
        if (message.content.some((p) => p.text)) {
          items.push({
            type: "message",
            role: "developer",
            content: message.content.map((p) => inputPart(p, field)),
          });
        }
        break;
      case "user":
        if (message.content.length) {
          items.push({
            type: "message",
            role: "user",
            content: message.content.map((p) => inputPart(p, field)),
          });
        }
        break;
      case "assistant":
        items.push(...assistantItems(message.content, provider));
        break;
      case "tool":
        for (const part of message.content) {
          items.push({
            type: part.kind === "custom" ? "custom_tool_call_output" : "function_call_output",
            call_id: part.id,
            output: resultOutput(part, field),
          });
        }
        break;
    }
  }
  return items;
}

function encodeTool(tool: FunctionTool): Json {
  const description = tool.description ? { description: tool.description } : {};
  if (tool.kind === "custom") return { type: "custom", name: tool.name, ...description };
  return {
    type: "function",
    name: tool.name,
    ...description,
    parameters: tool.parameters,
    strict: tool.strict ?? false,
  };
}

function encodeTools(request: CanonicalRequest): Json[] {
  const tools = request.tools.map(encodeTool);
  for (const hosted of request.hostedTools) {
    if (hosted.type !== "web_search") {
      throw inexpressible(hosted.field, `the hosted tool \`${hosted.name}\``, PROTOCOL);
    }
    tools.push({ type: "web_search" });
  }
  return tools;
}

function encodeChoice(request: CanonicalRequest): unknown {
  const choice = request.toolChoice;
  if (choice?.type !== "tool") return choice?.type;
  const custom = request.tools.find((t) => t.name === choice.name)?.kind === "custom";
  return { type: custom ? "custom" : "function", name: choice.name };
}

/** A user id as `safety_identifier` takes it (at most 64 characters: longer ones hashed). */
function safetyIdentifier(user: string): string {
  return user.length <= 64 ? user : `user_${shortHash(user)}${shortHash(`${user}#`)}`;
}

/** Notes what `request` loses on its way to a Responses upstream (see `adaptations.ts`). */
function noteAdaptations(request: CanonicalRequest, provider: string, adapt: Adapt): void {
  const field = request.fields.messages;
  if (unreplayed(request.messages, provider, ["encrypted-reasoning"])) {
    adapt("reasoning_not_replayed", field);
  }
  if (hostedRecords(request.messages)) adapt("hosted_history_dropped", field);
  if (failedResults(request.messages)) adapt("error_flag_as_text", field);
  for (const hosted of request.hostedTools) {
    if (hosted.type === "web_search" && hosted.maxUses) {
      adapt("search_options_dropped", hosted.field);
    }
  }
  const reasoning = request.reasoning;
  if (reasoning?.off || reasoning?.budgetTokens !== undefined) {
    adapt("reasoning_approximated", fieldOf(request, "reasoning"));
  }
  if (request.maxOutputTokens !== undefined && request.maxOutputTokens < 16) {
    adapt("max_output_raised", fieldOf(request, "maxOutputTokens"));
  }
}

/** A canonical request as a Responses body for `target` (OpenAI, xAI). */
export const encodeRequest = requestEncoder(PROTOCOL, (request, target, adapt) => {
  if (request.stop?.length) {
    throw inexpressible(request.fields.stop ?? "stop", "stop sequences", PROTOCOL);
  }
  const body: Json = {
    model: target.model,
    input: encodeInput(request, target.provider),
    store: false,
    include: ["reasoning.encrypted_content"],
  };
  const system = request.system.map((p) => p.text).filter(Boolean).join("\n\n");
  if (system) body.instructions = system;
  const tools = encodeTools(request);
  if (tools.length) {
    body.tools = tools;
    const choice = encodeChoice(request);
    if (choice !== undefined) body.tool_choice = choice;
    if (request.parallelToolCalls !== undefined) {
      body.parallel_tool_calls = request.parallelToolCalls;
    }
  }
  const cap = request.maxOutputTokens;
  encodeSampling(
    "responses",
    {
      ...request,
      maxOutputTokens: cap === undefined ? undefined : Math.max(16, cap),
    },
    body,
    {},
    adapt,
    request,
  );
  noteAdaptations(request, target.provider, adapt);
  const format = request.responseFormat;
  if (format) {
    body.text = {
      format: format.schema
        ? {
          type: "json_schema",
          name: format.name ?? "response",
          schema: format.schema,
          strict: format.strict ?? false,
          ...(format.description ? { description: format.description } : {}),
        }
        : { type: "json_object" },
    };
  }
  const reasoning = request.reasoning;
  if (reasoning && !reasoning.off) {
    const effort = reasoning.effort ??
      (reasoning.budgetTokens ? effortFor(reasoning.budgetTokens) : undefined);
    if (effort || reasoning.visible) {
      body.reasoning = {
        ...(effort ? { effort } : {}),
        ...(reasoning.visible ? { summary: "auto" } : {}),
      };
    }
  }
  if (request.user) body.safety_identifier = safetyIdentifier(request.user);
  const cache = request.cache;
  // Both cache by themselves: the key routes to the cache; only OpenAI documents a retention.
  if (cache?.key) body.prompt_cache_key = cache.key;
  if (cache?.retention && target.family === "openai") {
    body.prompt_cache_retention = cache.retention;
  }
  if (request.stream) body.stream = true;
  return body;
});
