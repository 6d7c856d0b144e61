/**
 * Emulated `POST /v1/alpha/search`, Codex's standalone web search (`xai.md` §4.1): a result text
 * built from the queries, and an opaque `encrypted_output`.
 */
import { openaiError, openaiFault } from "./openai.ts";
import { collectText, directives, opaque, sleep } from "./text.ts";

type Json = Record<string, unknown>;

/** `POST /v1/alpha/search`. */
export async function alphaSearch(req: Request): Promise<Response> {
  const body = await req.json() as Json;
  const commands = (body.commands ?? {}) as Json;
  const queries = Array.isArray(commands.search_query)
    ? (commands.search_query as Json[]).map((q) => String(q.q ?? ""))
    : [];
  const texts = [...collectText(body.input), ...queries];
  const d = directives(texts);
  await sleep(d.wait);
  const fault = openaiFault(d);
  if (fault) return fault;
  if (typeof body.model !== "string") return openaiError(400, "you must provide a model parameter");
  if (typeof body.id !== "string") return openaiError(400, "Missing required parameter: 'id'.");
  const topic = texts.join("; ").slice(0, 200) || "nothing";
  const output = `Search results for: ${topic}\n1. Emulated result - https://example.com/1\n` +
    `2. Emulated result - https://example.com/2`;
  return Response.json({
    output,
    encrypted_output: opaque(output),
  });
}
