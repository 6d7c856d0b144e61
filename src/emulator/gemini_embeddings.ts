/**
 * Emulated Gemini embeddings: `models/{model}:embedContent` answers
 * `{embedding: {values}, usageMetadata}`, `:batchEmbedContents` answers
 * `{embeddings: [{values}…], usageMetadata}` in the order of its `requests` (each an
 * `EmbedContentRequest` whose `model` must name the path's model, at most 100 of them). Vectors are
 * deterministic unit vectors of the contents' text (and task type), `outputDimensionality` long
 * (default: the model's size — 3072 for `gemini-embedding-*`, else 768); `usageMetadata` is the
 * API's `EmbeddingUsageMetadata` (`promptTokenCount`, `promptTokenDetails`), left out with
 * `[[emulate no_usage=1]]`. Models without `embedding` in their name get the API's 404 for a
 * method a model does not support; other mistakes a 400 `INVALID_ARGUMENT`, in Google's envelope.
 */
import { vector } from "./embeddings.ts";
import { googleError } from "./gemini.ts";
import { collectText, countTokens, directives, sleep } from "./text.ts";

type Json = Record<string, unknown>;

/** The API's `TaskType` values. */
const TASK_TYPES = new Set([
  "TASK_TYPE_UNSPECIFIED",
  "RETRIEVAL_QUERY",
  "RETRIEVAL_DOCUMENT",
  "SEMANTIC_SIMILARITY",
  "CLASSIFICATION",
  "CLUSTERING",
  "QUESTION_ANSWERING",
  "FACT_VERIFICATION",
  "CODE_RETRIEVAL_QUERY",
]);

/** The most requests one batch may hold. */
const MAX_BATCH = 100;

const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** The full size of a model's vectors. */
function sizeOf(model: string): number {
  return model.startsWith("gemini-embedding") ? 3072 : 768;
}

/** One request's embedding and token count, or the error response for it. */
function embedOne(
  request: Json,
  at: string,
  model: string,
): { values: number[]; tokens: number } | Response {
  const content = request.content;
  const parts = isObject(content) && Array.isArray(content.parts) ? content.parts : [];
  if (!parts.length) {
    return googleError(400, `* ${at}content: content is not specified`);
  }
  const taskType = request.taskType ?? request.task_type;
  if (taskType !== undefined && !TASK_TYPES.has(String(taskType))) {
    return googleError(
      400,
      `Invalid value at '${at}task_type' (type.googleapis.com/google.ai.generativelanguage.v1beta.TaskType), "${
        String(taskType)
      }"`,
    );
  }
  const size = sizeOf(model);
  const asked = request.outputDimensionality ?? request.output_dimensionality;
  const dimensions = asked === undefined ? size : Number(asked);
  if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > size) {
    return googleError(
      400,
      `* ${at}output_dimensionality: must be between 1 and ${size} for models/${model}`,
    );
  }
  const text = collectText(parts).join(" ");
  const values = vector(`${taskType ?? ""}\n${text}`, dimensions);
  return { values: Array.from(values), tokens: countTokens(text) };
}

function usageMetadata(tokens: number): Json {
  return {
    usageMetadata: {
      promptTokenCount: tokens,
      promptTokenDetails: [{ modality: "TEXT", tokenCount: tokens }],
    },
  };
}

/** `…/models/{model}:embedContent` and `…:batchEmbedContents`. */
export async function embedContents(
  req: Request,
  model: string,
  batch: boolean,
): Promise<Response> {
  const body = await req.json() as Json;
  const d = directives(collectText(body));
  await sleep(d.wait);
  if (d.status) return googleError(d.status, `Emulated error ${d.status}.`);
  const action = batch ? "batchEmbedContents" : "embedContent";
  if (!model.includes("embedding")) {
    return googleError(
      404,
      `models/${model} is not found for API version v1beta, or is not supported for ${action}. Call ListModels to see the list of available models and their supported methods.`,
    );
  }
  const requests: [Json, string][] = batch
    ? (Array.isArray(body.requests) ? body.requests : []).map((r, i) => [
      isObject(r) ? r : {},
      `BatchEmbedContentsRequest.requests[${i}].`,
    ])
    : [[body, "EmbedContentRequest."]];
  if (batch && !requests.length) {
    return googleError(400, "* BatchEmbedContentsRequest.requests: requests is not specified");
  }
  if (requests.length > MAX_BATCH) {
    return googleError(
      400,
      `* BatchEmbedContentsRequest.requests: at most ${MAX_BATCH} requests can be in one batch`,
    );
  }
  const embeddings: { values: number[] }[] = [];
  let tokens = 0;
  for (const [request, at] of requests) {
    // Each request of a batch names its model (the API requires it), the path's one.
    if ((batch || request.model !== undefined) && request.model !== `models/${model}`) {
      return googleError(
        400,
        `* ${at}model: must be the model of the request's URL, models/${model} (got ${
          JSON.stringify(request.model ?? null)
        })`,
      );
    }
    const one = embedOne(request, at, model);
    if (one instanceof Response) return one;
    embeddings.push({ values: one.values });
    tokens += one.tokens;
  }
  const usage = d.noUsage ? {} : usageMetadata(tokens);
  return Response.json(
    batch ? { embeddings, ...usage } : { embedding: embeddings[0], ...usage },
  );
}
