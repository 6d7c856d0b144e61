/**
 * Emulated OpenAI / xAI Responses API, beside `/v1/responses` (`responses.ts`): `input_tokens`,
 * the count a response would report as input, and `compact`, a conversation made short.
 */
import { collectText, countTokens, directives, newId, opaque } from "./text.ts";
import { openaiFault } from "./openai.ts";
import { inputTokenCount, type Item, type Json, readResponsesCall } from "./responses.ts";

/** `POST /v1/responses/input_tokens`: the count `/v1/responses` would report as input. */
export async function inputTokens(req: Request): Promise<Response> {
  const body = await req.json() as Json;
  const texts = collectText([body.instructions, body.input]);
  const fault = openaiFault(directives(texts));
  if (fault) return fault;
  return Response.json({
    object: "response.input_tokens",
    input_tokens: inputTokenCount(body, texts),
  });
}

/**
 * `POST /v1/responses/compact`: the user messages kept, one opaque `compaction` item, and usage
 * (input from the text, output about a quarter of it).
 */
export async function compact(req: Request): Promise<Response> {
  const call = await readResponsesCall(req);
  if (call instanceof Response) return call;
  const { body, texts } = call;
  const items: Item[] = typeof body.input === "string"
    ? [{ type: "message", role: "user", content: body.input }]
    : Array.isArray(body.input)
    ? body.input as Item[]
    : [];
  const kept = items
    .filter((item) => item.role === "user")
    .map((item) => ({
      id: newId("msg_", 48),
      type: "message",
      status: "completed",
      role: "user",
      content: collectText(item.content).map((text) => ({ type: "input_text", text })),
    }));
  const input = countTokens(texts.join(" ")) + 3 * Math.max(1, items.length);
  const output = Math.ceil(input / 4) + 8;
  return Response.json({
    id: newId("resp_", 48),
    object: "response.compaction",
    created_at: Math.floor(Date.now() / 1000),
    output: [...kept, {
      id: newId("cmp_", 48),
      type: "compaction",
      encrypted_content: opaque(texts.join(" ")),
    }],
    usage: {
      input_tokens: input,
      input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
      output_tokens: output,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: input + output,
    },
  });
}
