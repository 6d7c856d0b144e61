/**
 * Emulated `POST /v1/embeddings` (`openai-other.md` §2): deterministic unit vectors derived from
 * the input, `float` arrays or `base64` strings of packed little-endian float32, and
 * `usage.prompt_tokens` counted from the input (token-id arrays count one per id).
 */
import { openaiError, openaiFault } from "./openai.ts";
import { base64Bytes, countTokens, directives, sleep } from "./text.ts";

type Json = Record<string, unknown>;

const DIMENSIONS: Record<string, number> = { "text-embedding-3-large": 3072 };

/** A deterministic unit vector for `text`. */
export function vector(text: string, dimensions: number): Float32Array {
  let seed = 2166136261;
  for (let i = 0; i < text.length; i++) seed = Math.imul(seed ^ text.charCodeAt(i), 16777619);
  const out = new Float32Array(dimensions);
  let norm = 0;
  for (let i = 0; i < dimensions; i++) {
    seed = Math.imul(seed ^ (seed >>> 15), 2246822507) >>> 0;
    out[i] = (seed / 0xffffffff) * 2 - 1;
    norm += out[i] * out[i];
  }
  const scale = 1 / Math.sqrt(norm);
  for (let i = 0; i < dimensions; i++) out[i] *= scale;
  return out;
}

function base64(values: Float32Array): string {
  const bytes = new Uint8Array(values.length * 4);
  const view = new DataView(bytes.buffer);
  values.forEach((value, i) => view.setFloat32(i * 4, value, true));
  return base64Bytes(bytes);
}

/** `POST /v1/embeddings`. */
export async function embeddings(req: Request): Promise<Response> {
  const body = await req.json() as Json;
  const raw = body.input;
  const inputs: (string | number[])[] = typeof raw === "string" || isIds(raw)
    ? [raw as string | number[]]
    : Array.isArray(raw)
    ? raw as (string | number[])[]
    : [];
  const d = directives(inputs.filter((i): i is string => typeof i === "string"));
  await sleep(d.wait);
  const fault = openaiFault(d);
  if (fault) return fault;
  if (typeof body.model !== "string") return openaiError(400, "you must provide a model parameter");
  if (inputs.length === 0 || inputs.some((i) => i === "" || (Array.isArray(i) && !i.length))) {
    return openaiError(400, "'$.input' is invalid. Please check the API reference.");
  }
  const modelDimensions = Object.hasOwn(DIMENSIONS, body.model) ? DIMENSIONS[body.model] : 1536;
  const dimensions = typeof body.dimensions === "number" ? body.dimensions : modelDimensions;
  if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > modelDimensions) {
    return openaiError(
      400,
      `This model's maximum dimensions is ${modelDimensions}; ${dimensions} is not supported.`,
    );
  }
  const asBase64 = body.encoding_format === "base64";
  let tokens = 0;
  const data = inputs.map((input, index) => {
    const text = typeof input === "string" ? input : input.join(",");
    tokens += typeof input === "string" ? countTokens(input) : input.length;
    const values = vector(text, dimensions);
    return {
      object: "embedding",
      index,
      embedding: asBase64 ? base64(values) : Array.from(values),
    };
  });
  return Response.json({
    object: "list",
    data,
    model: body.model,
    usage: { prompt_tokens: tokens, total_tokens: tokens },
  });
}

function isIds(value: unknown): boolean {
  return Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === "number");
}
