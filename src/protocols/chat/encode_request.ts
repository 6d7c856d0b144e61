/**
 * The canonical form → a chat-completions request for an OpenAI-compatible upstream (pure;
 * `openai-other.md` §1, `translation.md`). Policies where the formats differ:
 * - chat has no error flag, so a failed result is sent as its text prefixed `Error: ` (unless the
 *   text already starts with "error"); files inside a result cannot be sent and are refused;
 * - a user message of text only is sent as one string (its parts joined by a blank line), so
 *   servers that take only string content work; otherwise as parts;
 * - reasoning has no slot in a chat request: it is never sent upstream, and opaque provider state
 *   (signatures, encrypted reasoning, Gemini thought signatures) has nowhere to live in a chat
 *   client's history: it does not survive a chat client's round trip (the other encoders cope
 *   with its absence);
 * - records of hosted work (`hosted-call` parts) are not sent: a chat upstream cannot replay them;
 * - web search is not offered (a chat upstream cannot search: noted as `web_search_dropped`), other
 *   hosted tools cannot run there and are refused by the client's field name; and free-form
 *   (custom) tools are offered to a chat upstream as functions taking `{input}`;
 * - the output cap is `max_completion_tokens` for OpenAI itself, `max_tokens` for every other
 *   server (vLLM, Ollama, llama.cpp and most vendors read only that one); `top_k`, a reasoning
 *   budget's exact size (sent as the nearest effort) and `visible` have no field and are not sent;
 * - streams ask for the usage chunk (`stream_options.include_usage`);
 * - the prompt cache is the server's own: `prompt_cache_key` and `prompt_cache_retention` go to
 *   OpenAI only (other servers may refuse fields they do not know); breakpoints are not sent;
 * - each adaptation is noted (see `translate/adaptations.ts`).
 */
import {
  type Adapt,
  failedResults,
  fieldOf,
  hostedRecords,
  unreplayed,
} from "../../translate/adaptations.ts";
import { CUSTOM_INPUT } from "../../translate/custom_tools.ts";
import { dataUrl } from "../../translate/data_url.ts";
import { inexpressible } from "../../translate/inexpressible.ts";
import type {
  AssistantPart,
  CanonicalRequest,
  FilePart,
  FunctionTool,
  Json,
  TextPart,
  ToolChoice,
  ToolResultPart,
} from "../../translate/ir.ts";
import { effortFor } from "../../translate/reasoning.ts";
import { encodeSampling, requestEncoder } from "../../translate/sampling.ts";
import { stringifyArguments } from "../../translate/tool_ids.ts";

const PROTOCOL = "chat completions";

/** Audio media type subtypes → `input_audio.format`. */
const AUDIO_FORMATS: Record<string, string> = {
  wav: "wav",
  wave: "wav",
  "x-wav": "wav",
  mpeg: "mp3",
  mp3: "mp3",
};

function encodeUserPart(part: TextPart | FilePart, field: string): Json {
  if (part.type === "text") return { type: "text", text: part.text };
  if (part.mediaType.startsWith("image/")) {
    return {
      type: "image_url",
      image_url: { url: dataUrl(part), ...(part.detail ? { detail: part.detail } : {}) },
    };
  }
  if (!("base64" in part.data)) {
    throw inexpressible(field, `a \`${part.mediaType}\` file given by URL`, PROTOCOL);
  }
  if (part.mediaType.startsWith("audio/")) {
    const subtype = part.mediaType.slice("audio/".length);
    return {
      type: "input_audio",
      input_audio: { data: part.data.base64, format: AUDIO_FORMATS[subtype] ?? subtype },
    };
  }
  return {
    type: "file",
    file: { file_data: dataUrl(part), filename: part.filename ?? "file.pdf" },
  };
}

/** A user message: one string when it is all text, else parts. */
function encodeUser(content: (TextPart | FilePart)[], field: string): Json {
  const texts = content.filter((p): p is TextPart => p.type === "text");
  return {
    role: "user",
    content: texts.length === content.length
      ? texts.map((p) => p.text).join("\n\n")
      : content.map((p) => encodeUserPart(p, field)),
  };
}

/** An assistant message: its text and calls (reasoning and hosted work are not sent). */
function encodeAssistant(content: AssistantPart[]): Json | null {
  const text = content.flatMap((p) => p.type === "text" ? [p.text] : []).join("");
  const calls = content.flatMap((p) =>
    p.type === "tool-call"
      ? [{
        id: p.id,
        type: "function",
        function: { name: p.name, arguments: stringifyArguments(p.input) },
      }]
      : []
  );
  if (!text && !calls.length) return null;
  return {
    role: "assistant",
    content: text || null,
    ...(calls.length ? { tool_calls: calls } : {}),
  };
}

/** A result's text; a failed one says so (chat has no error flag). */
function resultText(part: ToolResultPart, field: string): string {
  const text = part.content.map((c) => {
    if (c.type !== "text") throw inexpressible(field, "a file inside a tool result", PROTOCOL);
    return c.text;
  }).join("\n");
  return part.isError && !/^error\b/i.test(text) ? `Error: ${text}` : text;
}

function encodeMessages(request: CanonicalRequest): Json[] {
  const field = request.fields.messages;
  const out: Json[] = [];
  const system = request.system.map((p) => p.text).filter(Boolean).join("\n\n");
  if (system) out.push({ role: "system", content: system });
  for (const message of request.messages) {
    switch (message.role) {
      case "system": {
        const text = message.content.map((p) => p.text).filter(Boolean).join("\n\n");
        if (text) out.push({ role: "system", content: text });
        break;
      }
      case "user":
        out.push(encodeUser(message.content, field));
        break;
      case "assistant": {
        const assistant = encodeAssistant(message.content);
        if (assistant) out.push(assistant);
        break;
      }
      case "tool":
        for (const part of message.content) {
          out.push({ role: "tool", tool_call_id: part.id, content: resultText(part, field) });
        }
        break;
    }
  }
  return out;
}

function encodeTool(tool: FunctionTool): Json {
  return {
    type: "function",
    function: {
      name: tool.name,
      ...(tool.description ? { description: tool.description } : {}),
      parameters: tool.kind === "custom" ? CUSTOM_INPUT : tool.parameters,
      ...(tool.strict !== undefined ? { strict: tool.strict } : {}),
    },
  };
}

function encodeChoice(choice: ToolChoice): unknown {
  return choice.type === "tool"
    ? { type: "function", function: { name: choice.name } }
    : choice.type;
}

function encodeFormat(format: NonNullable<CanonicalRequest["responseFormat"]>): Json {
  if (!format.schema) return { type: "json_object" };
  return {
    type: "json_schema",
    json_schema: {
      name: format.name ?? "response",
      schema: format.schema,
      ...(format.description ? { description: format.description } : {}),
      ...(format.strict !== undefined ? { strict: format.strict } : {}),
    },
  };
}

/** Notes what `request` loses on its way to a chat upstream (see `adaptations.ts`). */
function noteAdaptations(request: CanonicalRequest, adapt: Adapt): void {
  const field = request.fields.messages;
  // Chat takes no reasoning and no provider state at all.
  if (unreplayed(request.messages, "", [])) adapt("reasoning_not_replayed", field);
  if (hostedRecords(request.messages)) adapt("hosted_history_dropped", field);
  if (failedResults(request.messages)) adapt("error_flag_as_text", field);
  const reasoning = request.reasoning;
  if (reasoning?.off || reasoning?.budgetTokens !== undefined || reasoning?.visible) {
    adapt("reasoning_approximated", fieldOf(request, "reasoning"));
  }
}

/** A canonical request as a chat body for `target`. */
export const encodeRequest = requestEncoder(PROTOCOL, (request, target, adapt) => {
  // Web search is offered, never forced (a forced hosted tool is refused where it is read): a
  // chat upstream cannot search, so the model answers without it — noted, and refused when strict.
  for (const hosted of request.hostedTools) {
    if (hosted.type !== "web_search") {
      throw inexpressible(hosted.field, `the hosted tool \`${hosted.name}\``, PROTOCOL);
    }
    adapt("web_search_dropped", hosted.field);
  }
  const body: Json = { model: target.model, messages: encodeMessages(request) };
  if (request.tools.length) {
    body.tools = request.tools.map(encodeTool);
    if (request.toolChoice) body.tool_choice = encodeChoice(request.toolChoice);
    if (request.parallelToolCalls !== undefined) {
      body.parallel_tool_calls = request.parallelToolCalls;
    }
  }
  // The output cap is `max_completion_tokens` for OpenAI itself, `max_tokens` for every other.
  encodeSampling(
    "chat",
    request,
    body,
    {
      maxOutputTokens: target.family === "openai" ? "max_completion_tokens" : "max_tokens",
    },
    adapt,
    request,
  );
  noteAdaptations(request, adapt);
  if (request.responseFormat) body.response_format = encodeFormat(request.responseFormat);
  const reasoning = request.reasoning;
  if (reasoning && !reasoning.off) {
    const effort = reasoning.effort ??
      (reasoning.budgetTokens ? effortFor(reasoning.budgetTokens) : undefined);
    if (effort) body.reasoning_effort = effort;
  }
  if (request.user) body.user = request.user;
  // OpenAI's own chat completions take the cache key and retention; other servers may refuse them.
  if (target.family === "openai") {
    if (request.cache?.key) body.prompt_cache_key = request.cache.key;
    if (request.cache?.retention) body.prompt_cache_retention = request.cache.retention;
  }
  if (request.stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  return body;
});
