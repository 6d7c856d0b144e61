/**
 * Emulated OpenAI / xAI Responses API (`openai-responses.md`): the Response object, the named SSE
 * stream with `sequence_number` and no `[DONE]`, usage computed from the text, function calls when
 * tools are offered (steered by the prompt, see `text.ts`), a reasoning item first whenever
 * `reasoning` is set (a summary when asked, `encrypted_content` with `include` — sealed by the
 * emulator and verified when replayed — and `reasoning_tokens` in usage), hosted tool calls,
 * JSON matching `text.format`'s schema, call outputs checked against the calls of the input,
 * item references to the items of stored responses (others are not found),
 * `incomplete` at `max_output_tokens`, errors in OpenAI's envelope (`openai.ts`); `input_tokens`
 * and `compact` beside it are `responses_side.ts`'s.
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
  sleep,
  sseBody,
  tokenize,
  toolArguments,
  unseal,
} from "./text.ts";
import { openaiError, openaiFault, servedTier, streamRateLimit, unknownModel } from "./openai.ts";
import {
  type CacheContext,
  openaiCached,
  openaiSeed,
  type Prefixes,
  prefixes,
  type Segment,
} from "./prompt_cache.ts";

/** A JSON object as the emulator reads one. */
export type Json = Record<string, unknown>;

/** An input item, as far as the emulator reads it. */
export interface Item {
  type: string;
  role?: string;
  content?: unknown;
  call_id?: string;
  output?: unknown;
}

function lastUserText(input: unknown): string {
  if (typeof input === "string") return input;
  const items = Array.isArray(input) ? input as Item[] : [];
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i];
    if (item.type === "function_call_output" || item.type === "custom_tool_call_output") {
      return `the tool returned ${collectText(item.output).join(" ") || "a result"}`;
    }
    if (item.role === "user") return collectText(item.content).join(" ");
  }
  return "";
}

function functionTools(body: Json, d: Directives): Json[] {
  const tools = Array.isArray(body.tools) ? body.tools as Json[] : [];
  const items = Array.isArray(body.input) ? body.input as Item[] : [];
  const answered = items.some((i) => i.type === "function_call_output");
  if (answered || body.tool_choice === "none") return [];
  const choice = body.tool_choice as Json | undefined;
  return pickTools(tools.filter((t) => t.type === "function"), (t) => String(t.name), d, {
    forced: choice?.type === "function" ? choice.name as string | undefined : undefined,
    single: body.parallel_tool_calls === false,
  });
}

/** The answer text: JSON for a structured-output request, else the echo. */
function answerText(body: Json, d: Directives): string {
  const format = (body.text as Json | undefined)?.format as Json | undefined;
  if (format?.type === "json_schema") return JSON.stringify(exampleValue(format.schema));
  if (format?.type === "json_object") {
    return JSON.stringify({ answer: answer(lastUserText(body.input), d) });
  }
  return answer(lastUserText(body.input), d);
}

const SUMMARY = "Thinking it through.";

/** The prefix of the emulator's `encrypted_content` (as OpenAI's Fernet-like tokens start). */
const ENCRYPTED = "gAAAAB";

const NOT_PERSISTED =
  "Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input.";

/**
 * Input items the real API rejects: a reference to an item of no stored response, reasoning whose
 * encrypted content it did not issue, and a call output that answers no call of the input (a
 * referred one counts; without a stored previous response).
 */
function invalidInput(body: Json): Response | undefined {
  const given = Array.isArray(body.input) ? body.input as Json[] : [];
  for (const item of given) {
    if (item.type === "item_reference" && !storedItems.has(String(item.id))) {
      const message = `Item with id '${String(item.id)}' not found. ${NOT_PERSISTED}`;
      return Response.json({
        error: { message, type: "invalid_request_error", param: "input", code: null },
      }, { status: 404 });
    }
  }
  const items = given.map((i) => i.type === "item_reference" ? storedItems.get(String(i.id))! : i);
  const calls = new Set(
    items.flatMap((i) =>
      i.type === "function_call" || i.type === "custom_tool_call" ? [String(i.call_id)] : []
    ),
  );
  for (const item of items) {
    if (
      item.type === "reasoning" && item.encrypted_content != null &&
      unseal(ENCRYPTED, item.encrypted_content) === undefined
    ) {
      return openaiError(
        400,
        `The encrypted content for item ${String(item.id ?? "")} could not be verified.`,
      );
    }
    if (
      (item.type === "function_call_output" || item.type === "custom_tool_call_output") &&
      body.previous_response_id === undefined && !calls.has(String(item.call_id))
    ) {
      return openaiError(
        400,
        `No tool call found for function call output with call_id ${String(item.call_id)}.`,
      );
    }
  }
  return undefined;
}

interface ResponsesCall {
  body: Json;
  /** The prompt's texts (instructions and input). */
  texts: string[];
  d: Directives;
}

/**
 * Reads a Responses-family request (responses, compact): after any `wait`, the fault it asks for
 * or a missing `model` is the answer instead.
 */
export async function readResponsesCall(req: Request): Promise<ResponsesCall | Response> {
  const body = await req.json() as Json;
  const texts = collectText([body.instructions, body.input]);
  const d = directives(texts);
  await sleep(d.wait);
  const fault = openaiFault(d, body.model);
  if (fault) return fault;
  if (typeof body.model !== "string") {
    return openaiError(400, "Missing required parameter: 'model'.");
  }
  return unknownModel(body.model) ?? { body, texts, d };
}

/** Input tokens as `/v1/responses` reports them: the text's tokens plus 3 per input item. */
export function inputTokenCount(body: Json, texts: string[]): number {
  return countTokens(texts.join(" ")) + (Array.isArray(body.input) ? 3 * body.input.length : 3);
}

/** A conversation a response ends: its tokens (input and output) and its prompt's prefixes. */
interface Ended {
  tokens: number;
  /** Absent where nothing is cached (a provider other than OpenAI). */
  prompt?: Prefixes;
}

/** Stored responses: id → the conversation they end. */
const stored = new Map<string, Ended>();
/** The output items of stored responses, by id (an `item_reference` names one). */
const storedItems = new Map<string, Json>();

/**
 * What a WebSocket connection keeps of its last response (OpenAI's connection-local cache): a
 * `previous_response_id` naming it continues it, stored or not.
 */
export interface ConnectionCache {
  last?: { id: string } & Ended;
}

/**
 * A Responses request as OpenAI's cache names it: its `prompt_cache_key` and tools first (no
 * tokens of their own here), the instructions, then each input item (3 tokens of structure and
 * its text), after the conversation a `previous_response_id` continues.
 */
function promptOf(body: Json, history?: Prefixes): Prefixes {
  const seed = openaiSeed(body);
  const segments: Segment[] = [];
  const instructions = countTokens(collectText(body.instructions).join(" "));
  if (instructions) {
    segments.push({ text: JSON.stringify(body.instructions), tokens: instructions });
  }
  const items = Array.isArray(body.input) ? body.input : [body.input];
  for (const item of items) {
    segments.push({
      text: JSON.stringify(item),
      tokens: 3 + countTokens(collectText(item).join(" ")),
    });
  }
  return prefixes(seed, segments, history);
}

/** The request's key's cache, when it has one the emulator models (OpenAI's, not xAI's). */
function openaiCache(cache: CacheContext | undefined): CacheContext | undefined {
  return cache?.provider === "openai" ? cache : undefined;
}

/**
 * `POST /v1/responses` (and a turn of a WebSocket, with its connection's cache: `generate: false`
 * then makes a response without output, to continue from); `cache`: the prompt cache of the
 * request's key (OpenAI's only).
 */
export async function responses(
  req: Request,
  connection?: ConnectionCache,
  context?: CacheContext,
): Promise<Response> {
  const call = await readResponsesCall(req);
  if (call instanceof Response) return call;
  const { body, texts, d } = call;

  let previous: Ended | undefined;
  if (typeof body.previous_response_id === "string") {
    const local = connection?.last?.id === body.previous_response_id ? connection.last : undefined;
    previous = local ?? stored.get(body.previous_response_id);
    if (previous === undefined) {
      return Response.json({
        error: {
          message: `Previous response with id '${body.previous_response_id}' not found.`,
          type: "invalid_request_error",
          param: "previous_response_id",
          code: "previous_response_not_found",
        },
      }, { status: 400 });
    }
  }
  const inputTokens = inputTokenCount(body, texts) + (previous?.tokens ?? 0);
  // `[[emulate cached=N cache_write=N]]` say what is read and written, else the cache does.
  const directed = d.cached !== undefined || d.cacheWrite !== undefined;
  const cache = directed ? undefined : openaiCache(context);
  const prompt = cache && promptOf(body, previous?.prompt);
  const cached = prompt
    ? openaiCached(cache, String(body.model), body.prompt_cache_retention, prompt, inputTokens)
    : Math.min(d.cached ?? 0, inputTokens);
  const written = Math.min(d.cacheWrite ?? 0, inputTokens - cached);
  const id = newId("resp_", 48);
  const createdAt = Math.floor(Date.now() / 1000);
  // A reasoning item whenever `reasoning` is set (no effort given: the default, medium).
  const reasoning = body.reasoning !== null && typeof body.reasoning === "object" &&
    (body.reasoning as Json).effort !== "none";
  const invalid = invalidInput(body);
  if (invalid) return invalid;
  const warmUp = connection !== undefined && body.generate === false;
  const tools = warmUp ? [] : functionTools(body, d);
  const max = typeof body.max_output_tokens === "number" ? body.max_output_tokens : Infinity;

  const outputItems: Json[] = [];
  let reasoningTokens = 0;
  if (reasoning && !warmUp) {
    reasoningTokens = 16;
    const summary = (body.reasoning as Json).summary;
    const include = Array.isArray(body.include) ? body.include : [];
    const id = newId("rs_", 48);
    outputItems.push({
      id,
      type: "reasoning",
      summary: summary ? [{ type: "summary_text", text: SUMMARY }] : [],
      ...(include.includes("reasoning.encrypted_content")
        ? { encrypted_content: seal(ENCRYPTED, JSON.stringify({ id, summary: SUMMARY })) }
        : {}),
    });
  }
  if (!warmUp) outputItems.push(...hostedCalls(body, lastUserText(body.input)));
  let pieces: string[] = [];
  let incomplete = false;
  if (tools.length) {
    for (const tool of tools) {
      const args = JSON.stringify(toolArguments(tool.parameters, d));
      pieces.push(...tokenize(args));
      outputItems.push({
        id: newId("fc_", 48),
        type: "function_call",
        status: "completed",
        arguments: args,
        call_id: newId("call_", 24),
        name: tool.name,
      });
    }
  } else if (!warmUp) {
    pieces = tokenize(answerText(body, d));
    if (reasoningTokens + pieces.length > max) {
      pieces = pieces.slice(0, Math.max(0, max - reasoningTokens));
      incomplete = true;
    }
    outputItems.push({
      id: newId("msg_", 48),
      type: "message",
      status: incomplete ? "incomplete" : "completed",
      content: [{ type: "output_text", annotations: [], logprobs: [], text: pieces.join("") }],
      role: "assistant",
    });
  }
  const outputTokens = reasoningTokens + pieces.length;
  const ended: Ended = {
    tokens: inputTokens + outputTokens,
    prompt: prompt &&
      prefixes("", [{ text: JSON.stringify(outputItems), tokens: outputTokens }], prompt),
  };
  if (body.store !== false) {
    if (stored.size >= 10_000) stored.clear();
    stored.set(id, ended);
    if (storedItems.size >= 50_000) storedItems.clear();
    for (const item of outputItems) storedItems.set(String(item.id), item);
  }
  if (connection) connection.last = { id, ...ended };
  const usage = {
    input_tokens: inputTokens,
    // `cache_write_tokens` is newer than the field it sits in: older answers leave it out.
    input_tokens_details: {
      cached_tokens: cached,
      ...(written ? { cache_write_tokens: written } : {}),
    },
    output_tokens: outputTokens,
    output_tokens_details: { reasoning_tokens: reasoningTokens },
    total_tokens: inputTokens + outputTokens,
  };
  const status = incomplete ? "incomplete" : "completed";
  const response = (state: "in_progress" | "final") =>
    responseObject(body, {
      id,
      createdAt,
      status: state === "final" ? status : "in_progress",
      output: state === "final" ? outputItems : [],
      usage: state === "final" ? usage : null,
      incomplete,
    });

  if (body.stream !== true) {
    if (!d.stall) return Response.json(response("final"));
    // The headers and a first byte, then a pause before the rest of the answer.
    const text = JSON.stringify(response("final"));
    const encoder = new TextEncoder();
    return new Response(
      new ReadableStream({
        async start(controller) {
          controller.enqueue(encoder.encode(text.slice(0, 1)));
          await sleep(d.stall);
          controller.enqueue(encoder.encode(text.slice(1)));
          controller.close();
        },
      }),
      { headers: { "content-type": "application/json" } },
    );
  }

  const obfuscate = (body.stream_options as Json | undefined)?.include_obfuscation !== false;
  async function* events(): AsyncGenerator<string> {
    for await (const event of responseEvents()) {
      if (d.streamError !== undefined && sent++ >= d.streamError) {
        yield encodeSse(JSON.stringify(streamRateLimit(body.model)), "error");
        return;
      }
      yield event;
    }
  }
  let sent = 0;
  async function* responseEvents(): AsyncGenerator<string> {
    let seq = 0;
    const ev = (type: string, payload: Json) =>
      encodeSse(JSON.stringify({ type, ...payload, sequence_number: seq++ }), type);
    yield ev("response.created", { response: response("in_progress") });
    yield ev("response.in_progress", { response: response("in_progress") });
    for (const [index, item] of outputItems.entries()) {
      const itemId = item.id as string;
      if (item.type === "reasoning") {
        const { encrypted_content: _, ...added } = item;
        yield ev("response.output_item.added", {
          item: { ...added, summary: [] },
          output_index: index,
        });
        const summary = item.summary as Json[];
        if (summary.length) {
          const part = { type: "summary_text", text: "" };
          const at = { item_id: itemId, output_index: index, summary_index: 0 };
          yield ev("response.reasoning_summary_part.added", { ...at, part });
          for (const delta of tokenize(SUMMARY)) {
            yield ev("response.reasoning_summary_text.delta", { ...at, delta });
          }
          yield ev("response.reasoning_summary_text.done", { ...at, text: SUMMARY });
          yield ev("response.reasoning_summary_part.done", {
            ...at,
            part: { ...part, text: SUMMARY },
          });
        }
        yield ev("response.output_item.done", { item, output_index: index });
      } else if (HOSTED_EVENTS[item.type as string]) {
        const prefix = HOSTED_EVENTS[item.type as string];
        yield ev("response.output_item.added", {
          item: { ...item, status: "in_progress" },
          output_index: index,
        });
        for (const phase of ["in_progress", prefix.searching, "completed"]) {
          if (phase) {
            yield ev(`response.${prefix.name}.${phase}`, { item_id: itemId, output_index: index });
          }
        }
        yield ev("response.output_item.done", { item, output_index: index });
      } else if (item.type === "function_call") {
        yield ev("response.output_item.added", {
          item: { ...item, status: "in_progress", arguments: "" },
          output_index: index,
        });
        for (const delta of tokenize(item.arguments as string)) {
          yield ev("response.function_call_arguments.delta", {
            delta,
            item_id: itemId,
            output_index: index,
            ...(obfuscate ? { obfuscation: pad(delta) } : {}),
          });
        }
        yield ev("response.function_call_arguments.done", {
          arguments: item.arguments,
          item_id: itemId,
          name: item.name,
          output_index: index,
        });
        yield ev("response.output_item.done", { item, output_index: index });
      } else {
        const emptyPart = { type: "output_text", annotations: [], logprobs: [], text: "" };
        yield ev("response.output_item.added", {
          item: { ...item, status: "in_progress", content: [] },
          output_index: index,
        });
        yield ev("response.content_part.added", {
          content_index: 0,
          item_id: itemId,
          output_index: index,
          part: emptyPart,
        });
        for (const delta of pieces) {
          yield ev("response.output_text.delta", {
            content_index: 0,
            delta,
            item_id: itemId,
            logprobs: [],
            ...(obfuscate ? { obfuscation: pad(delta) } : {}),
            output_index: index,
          });
        }
        const text = pieces.join("");
        yield ev("response.output_text.done", {
          content_index: 0,
          item_id: itemId,
          logprobs: [],
          output_index: index,
          text,
        });
        yield ev("response.content_part.done", {
          content_index: 0,
          item_id: itemId,
          output_index: index,
          part: { ...emptyPart, text },
        });
        yield ev("response.output_item.done", { item, output_index: index });
      }
    }
    yield ev(`response.${status}`, { response: response("final") });
  }
  return new Response(sseBody(events, d), {
    headers: { "content-type": "text/event-stream; charset=utf-8" },
  });
}

/** Stream event names of the hosted tool calls the emulator makes. */
const HOSTED_EVENTS: Record<string, { name: string; searching?: string }> = {
  web_search_call: { name: "web_search_call", searching: "searching" },
  file_search_call: { name: "file_search_call", searching: "searching" },
  code_interpreter_call: { name: "code_interpreter_call", searching: "interpreting" },
};

/** One call of each hosted tool offered (`openai-responses.md` §5), made before answering. */
function hostedCalls(body: Json, query: string): Json[] {
  const tools = Array.isArray(body.tools) ? body.tools as Json[] : [];
  const items: Json[] = [];
  for (const tool of tools) {
    const type = String(tool.type ?? "");
    if (type.startsWith("web_search")) {
      items.push({
        id: newId("ws_", 48),
        type: "web_search_call",
        status: "completed",
        action: { type: "search", query: query.slice(0, 100) },
      });
    } else if (type === "file_search") {
      items.push({
        id: newId("fs_", 48),
        type: "file_search_call",
        status: "completed",
        queries: [query.slice(0, 100)],
        results: null,
      });
    } else if (type === "code_interpreter") {
      items.push({
        id: newId("ci_", 48),
        type: "code_interpreter_call",
        status: "completed",
        code: "print(1 + 1)",
        container_id: newId("cntr_", 32),
        outputs: null,
      });
    }
  }
  return items;
}

function pad(delta: string): string {
  return "x".repeat(Math.max(1, 16 - delta.length));
}

interface Shape {
  id: string;
  createdAt: number;
  status: string;
  output: Json[];
  usage: Json | null;
  incomplete: boolean;
}

function responseObject(body: Json, s: Shape): Json {
  const final = s.status !== "in_progress";
  return {
    id: s.id,
    object: "response",
    created_at: s.createdAt,
    status: s.status,
    background: false,
    completed_at: s.status === "completed" ? s.createdAt : null,
    error: null,
    incomplete_details: s.incomplete && final ? { reason: "max_output_tokens" } : null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    max_tool_calls: body.max_tool_calls ?? null,
    model: body.model,
    output: s.output,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: body.previous_response_id ?? null,
    prompt_cache_key: body.prompt_cache_key ?? null,
    reasoning: body.reasoning ?? { effort: null, summary: null },
    safety_identifier: body.safety_identifier ?? null,
    service_tier: servedTier(body.service_tier),
    store: body.store ?? true,
    temperature: body.temperature ?? 1.0,
    text: body.text ?? { format: { type: "text" }, verbosity: "medium" },
    tool_choice: body.tool_choice ?? "auto",
    tools: body.tools ?? [],
    top_logprobs: 0,
    top_p: body.top_p ?? 1.0,
    truncation: "disabled",
    usage: s.usage,
    user: null,
    metadata: body.metadata ?? {},
  };
}
