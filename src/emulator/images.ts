/**
 * Emulated image endpoints (`openai-other.md` §3–4, `xai.md` §3): `POST /v1/images/generations`
 * (JSON) and `POST /v1/images/edits` (multipart with `image`/`image[]`/`mask`, or JSON with
 * `images[]`). GPT image models answer `b64_json` with `usage` and the size/quality used, and
 * stream `image_generation.*` / `image_edit.*` events; dall-e and xAI models answer `url` or
 * `b64_json` by `response_format`, without usage.
 */
import { encodeSse } from "../http/sse.ts";
import { openaiError, openaiFault } from "./openai.ts";
import { countTokens, directives, sleep, sseBody, TINY_PNG } from "./text.ts";

type Json = Record<string, unknown>;

/** GPT image output tokens per image by quality (square sizes; larger sizes cost half again). */
const OUTPUT_TOKENS: Record<string, number> = { low: 272, medium: 1056, high: 4160 };
const QUALITIES = ["low", "medium", "high", "auto"];

/** The request, whichever encoding it came in. */
interface ImageRequest {
  fields: Json;
  /** Number of input images (edits). */
  images: number;
}

async function readRequest(req: Request, mode: "generations" | "edits"): Promise<ImageRequest> {
  const type = req.headers.get("content-type") ?? "";
  if (mode === "edits" && type.startsWith("multipart/form-data")) {
    const form = await req.formData();
    const fields: Json = {};
    let images = 0;
    for (const [name, value] of form) {
      if (typeof value === "string") fields[name] = value;
      else if (name === "image" || name === "image[]") images++;
      else if (name === "mask") fields.mask = true;
    }
    return { fields, images };
  }
  const fields = await req.json() as Json;
  return { fields, images: Array.isArray(fields.images) ? fields.images.length : 0 };
}

/** `POST /v1/images/generations` and `/v1/images/edits`. */
export async function images(
  req: Request,
  mode: "generations" | "edits",
  vendor: string,
): Promise<Response> {
  const { fields, images: inputImages } = await readRequest(req, mode);
  const prompt = typeof fields.prompt === "string" ? fields.prompt : "";
  const d = directives([prompt]);
  await sleep(d.wait);
  const fault = openaiFault(d);
  if (fault) return fault;
  if (!prompt) return openaiError(400, "Missing required parameter: 'prompt'.");
  if (mode === "edits" && inputImages === 0) {
    return openaiError(400, "Missing required parameter: 'image'.");
  }
  const model = String(fields.model ?? "dall-e-2");
  const n = Number(fields.n ?? 1);
  if (!Number.isInteger(n) || n < 1 || n > 10) {
    return openaiError(400, `Invalid 'n': integer between 1 and 10 expected.`);
  }
  const gptImage = vendor === "openai" && model.startsWith("gpt-image");
  const created = Math.floor(Date.now() / 1000);
  if (!gptImage) {
    const asUrl = fields.response_format !== "b64_json";
    const data = Array.from(
      { length: n },
      (_, i) =>
        asUrl
          ? { url: `https://images.example.com/${vendor}/${created}-${i}.png` }
          : { b64_json: TINY_PNG },
    );
    return Response.json({ created, data });
  }

  const quality = String(fields.quality ?? "auto");
  if (!QUALITIES.includes(quality)) {
    return openaiError(400, `Invalid 'quality': expected one of ${QUALITIES.join(", ")}.`);
  }
  const size = String(fields.size ?? "auto");
  const shownSize = size === "auto" ? "1024x1024" : size;
  const shownQuality = quality === "auto" ? (d.detail ? "high" : "medium") : quality;
  const perImage = Math.round(
    OUTPUT_TOKENS[shownQuality] * (shownSize === "1024x1024" ? 1 : 1.5),
  );
  const textTokens = countTokens(prompt);
  const imageTokens = inputImages * 323;
  const usage = {
    input_tokens: textTokens + imageTokens,
    input_tokens_details: { text_tokens: textTokens, image_tokens: imageTokens },
    output_tokens: perImage * n,
    output_tokens_details: { image_tokens: perImage * n, text_tokens: 0 },
    total_tokens: textTokens + imageTokens + perImage * n,
  };
  const shape = {
    background: String(fields.background ?? "opaque"),
    output_format: String(fields.output_format ?? "png"),
    size: shownSize,
    quality: shownQuality,
  };
  if (fields.stream !== true && fields.stream !== "true") {
    return Response.json({
      created,
      ...shape,
      data: Array.from({ length: n }, () => ({ b64_json: TINY_PNG })),
      usage,
    });
  }
  const prefix = mode === "generations" ? "image_generation" : "image_edit";
  const partials = Math.min(3, Math.max(0, Number(fields.partial_images ?? 0)));
  const event = (kind: "partial_image" | "completed", extra: Json) => {
    const type = `${prefix}.${kind}`;
    const data = { type, b64_json: TINY_PNG, created_at: created, ...shape, ...extra };
    return encodeSse(JSON.stringify(data), type);
  };
  const perImageUsage = {
    ...usage,
    output_tokens: perImage,
    output_tokens_details: { image_tokens: perImage, text_tokens: 0 },
    total_tokens: usage.input_tokens + perImage,
  };
  async function* events(): AsyncGenerator<string> {
    for (let image = 0; image < n; image++) {
      for (let p = 0; p < partials; p++) yield event("partial_image", { partial_image_index: p });
      yield event("completed", { usage: perImageUsage });
    }
  }
  return new Response(sseBody(events, d), {
    headers: { "content-type": "text/event-stream; charset=utf-8" },
  });
}
