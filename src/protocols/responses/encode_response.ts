/**
 * The canonical form → a Responses answer for the client (pure; `openai-responses.md` §4): output
 * items with ids derived from the answer's, another provider's opaque state as the
 * `encrypted_content` token of a reasoning item (a Gemini signature on a call on an empty
 * reasoning item just before it; one on a text part has no slot and is not carried), calls as the
 * client declared their tools (free-form calls as `custom_tool_call`s, namespaced ones with their
 * `namespace`, those of a client-run tool that is not a function as that tool's call items), and
 * the response object around them, echoing the `previous_response_id` it continues. The stream encoder writes items with the
 * same functions.
 */
import type { AnswerInfo } from "../../translate/codec.ts";
import { customInput, isCustomCall } from "../../translate/custom_tools.ts";
import type {
  AssistantPart,
  CanonicalResponse,
  HostedCallPart,
  Json,
  Opaque,
  TokenUsage,
} from "../../translate/ir.ts";
import { parseArguments, stringifyArguments } from "../../translate/tool_ids.ts";
import { itemId } from "./item_ids.ts";
import { type ClientForm, formOf } from "./tool_types.ts";
import { encodeStatus } from "./status.ts";
import { encodeTokenUsage } from "./token_usage.ts";

/** A reasoning item for the client, its opaque state as a token. */
export function reasoningItem(
  id: string,
  text: string,
  opaque: Opaque | undefined,
  info: AnswerInfo,
): Json {
  return {
    id,
    type: "reasoning",
    summary: text ? [{ type: "summary_text", text }] : [],
    ...(opaque ? { encrypted_content: info.token(opaque, text) } : {}),
  };
}

/** A finished message item holding `text`. */
export function messageItem(id: string, text: string): Json {
  return {
    id,
    type: "message",
    status: "completed",
    role: "assistant",
    content: [{ type: "output_text", text, annotations: [], logprobs: [] }],
  };
}

/** How a call is written for the client: as its own tool type's call item, custom, or function. */
export function callForm(
  part: { name: string; kind?: string },
  info: AnswerInfo,
): ClientForm | "custom" | "function" {
  const type = info.clientTools?.get(part.name);
  const form = type ? formOf(type) : undefined;
  return form ?? (isCustomCall(part, info) ? "custom" : "function");
}

/** The id prefix of the items of a call of this form. */
export function callPrefix(form: ReturnType<typeof callForm>): string {
  return form === "custom" ? "ctc" : form === "function" ? "fc" : form.prefix;
}

/**
 * A call as the client declared its tool: the call item of a tool it runs that is not a function
 * (a `tool_search_call`…), custom, or function, with its namespace.
 */
export function callItem(
  id: string,
  part: { id: string; name: string; input: unknown; kind?: string },
  info: AnswerInfo,
): Json {
  const form = callForm(part, info);
  if (typeof form === "object") {
    return {
      id,
      type: form.call,
      call_id: part.id,
      status: "completed",
      ...form.item(parseArguments(part.input)),
    };
  }
  const named = info.namespaced?.get(part.name);
  const name = named ? { name: named.name, namespace: named.namespace } : { name: part.name };
  if (form === "custom") {
    return {
      id,
      type: "custom_tool_call",
      status: "completed",
      call_id: part.id,
      ...name,
      input: customInput(part.input),
    };
  }
  return {
    id,
    type: "function_call",
    status: "completed",
    call_id: part.id,
    ...name,
    arguments: stringifyArguments(part.input),
  };
}

/** A finished web search record (under the gateway's id: the provider's is not the client's). */
export function webSearchItem(id: string, part: HostedCallPart): Json {
  return {
    id,
    type: "web_search_call",
    status: "completed",
    action: { type: "search", query: part.query ?? "" },
  };
}

/**
 * The response object around `output`: status and usage given by the finish (in progress
 * without one), and the echoed request fields the SDKs read, as OpenAI writes them. There is no
 * `output_text` (the SDKs compute it).
 */
export function responseObject(
  info: AnswerInfo,
  output: Json[],
  finish: CanonicalResponse["finish"] | null,
  usage: TokenUsage | null,
): Json {
  const state = finish ? encodeStatus(finish.reason) : null;
  const status = state ? state.status : "in_progress";
  return {
    id: info.id,
    object: "response",
    created_at: info.created,
    status,
    background: false,
    completed_at: status === "completed" ? info.created : null,
    error: null,
    incomplete_details: state?.incomplete ? { reason: state.incomplete } : null,
    instructions: null,
    max_output_tokens: null,
    max_tool_calls: null,
    model: info.model,
    output,
    parallel_tool_calls: true,
    previous_response_id: info.previousId ?? null,
    prompt_cache_key: null,
    reasoning: { effort: null, summary: null },
    safety_identifier: null,
    service_tier: "default",
    store: true,
    temperature: null,
    text: { format: { type: "text" } },
    tool_choice: "auto",
    tools: [],
    top_logprobs: 0,
    top_p: null,
    truncation: "disabled",
    usage: usage ? encodeTokenUsage(usage) : null,
    user: null,
    metadata: {},
  };
}

/**
 * An answer's content as output items, with their ids: consecutive text is one message; another
 * provider's opaque state rides on reasoning items. The stream encoder writes the same items.
 */
export function outputItems(content: AssistantPart[], info: AnswerInfo): Json[] {
  const output: Json[] = [];
  /** The message item consecutive text parts go into. */
  let message: Json | null = null;
  for (const part of content) {
    if (part.type === "text") {
      if (!part.text) continue;
      if (message) {
        const content = (message.content as Json[])[0];
        content.text = String(content.text) + part.text;
      } else {
        message = messageItem(itemId("msg", info.id, output.length), part.text);
        output.push(message);
      }
      continue;
    }
    message = null;
    switch (part.type) {
      case "reasoning":
        if (part.text || part.opaque) {
          output.push(
            reasoningItem(itemId("rs", info.id, output.length), part.text, part.opaque, info),
          );
        }
        break;
      case "tool-call":
        if (part.opaque) {
          output.push(reasoningItem(itemId("rs", info.id, output.length), "", part.opaque, info));
        }
        output.push(
          callItem(itemId(callPrefix(callForm(part, info)), info.id, output.length), part, info),
        );
        break;
      case "hosted-call":
        output.push(webSearchItem(itemId("ws", info.id, output.length), part));
        break;
    }
  }
  return output;
}

/** A canonical answer as a Responses `response` object. */
export function encodeResponse(response: CanonicalResponse, info: AnswerInfo): Json {
  const output = outputItems(response.content, info);
  return responseObject(info, output, response.finish, response.usage);
}
