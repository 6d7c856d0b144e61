/**
 * Emulated Gemini API (`gemini.md`): generateContent, streamGenerateContent (SSE with CRLF-separated
 * data-only events and usage on every fragment, the last one authoritative; or one JSON array
 * without `alt=sse`), countTokens, function calls, image output for the image models, and errors
 * in Google's envelope.
 */
import { encodeSse } from "../http/sse.ts";
import {
  answer,
  collectText,
  countTokens,
  directives,
  exampleValue,
  newId,
  sleep,
  sseBody,
  TINY_PNG,
  tokenize,
} from "./text.ts";

type Json = Record<string, unknown>;

const STATUS: Record<number, string> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  429: "RESOURCE_EXHAUSTED",
  500: "INTERNAL",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED",
};

/** Google's error envelope. */
export function googleError(status: number, message: string): Response {
  return Response.json({
    error: { code: status, message, status: STATUS[status] ?? "UNKNOWN" },
  }, { status });
}

/** IMAGE output tokens per image size, in line with spec §4.5. */
function imageTokens(model: string, size: string): number {
  const pro = model.includes("pro");
  switch (size) {
    case "0.5K":
      return 560;
    case "2K":
      return 1680;
    case "4K":
      return pro ? 2000 : 2520;
    default:
      return pro ? 1120 : 1290;
  }
}

interface Content {
  role?: string;
  parts?: Json[];
}

function promptTexts(body: Json): string[] {
  return collectText([body.systemInstruction, body.contents, body.tools]);
}

/** `…:countTokens`. */
export async function countTokensHandler(req: Request): Promise<Response> {
  const body = await req.json() as Json;
  const tokens = countTokens(promptTexts(body).join(" "));
  return Response.json({
    totalTokens: tokens,
    promptTokensDetails: [{ modality: "TEXT", tokenCount: tokens }],
  });
}

/** `…:generateContent` and `…:streamGenerateContent`. */
export async function generate(req: Request, model: string, stream: boolean): Promise<Response> {
  const url = new URL(req.url);
  const body = await req.json() as Json;
  const d = directives(promptTexts(body));
  await sleep(d.wait);
  if (d.status) return googleError(d.status, `Emulated error ${d.status}.`);
  const contents = (Array.isArray(body.contents) ? body.contents : []) as Content[];
  if (!contents.length) {
    return googleError(400, "* GenerateContentRequest.contents: contents is not specified");
  }
  const config = (body.generationConfig ?? {}) as Json;
  const modalities = (config.responseModalities ?? ["TEXT"]) as string[];
  const imageSize = String((config.imageConfig as Json | undefined)?.imageSize ?? "1K");
  const promptTokens = countTokens(promptTexts(body).join(" ")) + 2 * contents.length;
  const cached = Math.min(d.cached ?? 0, promptTokens);

  const last = contents.at(-1)?.parts ?? [];
  const answeredTool = last.some((p) => "functionResponse" in p);
  const declarations = ((body.tools ?? []) as Json[]).flatMap((t) =>
    (t.functionDeclarations ?? []) as Json[]
  );
  const wantsImage = model.includes("image") && modalities.includes("IMAGE");
  const lastText = answeredTool
    ? `the tool returned ${JSON.stringify(last.find((p) => "functionResponse" in p))}`
    : collectText(last.filter((p) => "text" in p)).join(" ");

  const jsonSchema = config.responseMimeType === "application/json"
    ? config.responseJsonSchema ?? config.responseSchema ?? { type: "object" }
    : undefined;
  let textPieces = wantsImage && !modalities.includes("TEXT")
    ? []
    : tokenize(jsonSchema ? JSON.stringify(exampleValue(jsonSchema)) : answer(lastText, d));
  const max = typeof config.maxOutputTokens === "number" ? config.maxOutputTokens : Infinity;
  let finishReason = "STOP";
  if (textPieces.length > max) {
    textPieces = textPieces.slice(0, max);
    finishReason = "MAX_TOKENS";
  }
  const grounded = ((body.tools ?? []) as Json[]).some((t) => "googleSearch" in t);
  const grounding = grounded
    ? {
      groundingMetadata: {
        webSearchQueries: [lastText.replace(/\[\[emulate [^\]]*\]\]/g, "").trim().slice(0, 80)],
        groundingChunks: [{ web: { uri: "https://example.com/result", title: "example.com" } }],
      },
    }
    : {};
  const fragments: Json[][] = [];
  let thoughts = 0;
  let imageOut = 0;
  if (declarations.length && !answeredTool) {
    const fn = declarations[0];
    const args = exampleValue(
      fn.parameters ?? fn.parametersJsonSchema ?? fn.parameters_json_schema,
    );
    fragments.push([{ functionCall: { name: fn.name, args }, thoughtSignature: newId("Cus", 40) }]);
    thoughts = 24;
  } else {
    for (let i = 0; i < textPieces.length; i += 3) {
      fragments.push([{ text: textPieces.slice(i, i + 3).join("") }]);
    }
    if (wantsImage) {
      imageOut = imageTokens(model, imageSize);
      fragments.push([{ inlineData: { mimeType: "image/png", data: TINY_PNG } }]);
    }
  }
  const textOut = declarations.length && !answeredTool ? 8 : textPieces.length;
  const candidatesTokens = textOut + imageOut;
  const responseId = newId("", 22);
  const finalUsage: Json = {
    promptTokenCount: promptTokens,
    candidatesTokenCount: candidatesTokens,
    totalTokenCount: promptTokens + candidatesTokens + thoughts,
    ...(cached ? { cachedContentTokenCount: cached } : {}),
    promptTokensDetails: [{ modality: "TEXT", tokenCount: promptTokens }],
    candidatesTokensDetails: [
      { modality: "TEXT", tokenCount: textOut },
      ...(imageOut ? [{ modality: "IMAGE", tokenCount: imageOut }] : []),
    ],
    ...(thoughts ? { thoughtsTokenCount: thoughts } : {}),
  };
  const partialUsage: Json = {
    promptTokenCount: promptTokens,
    totalTokenCount: promptTokens,
    promptTokensDetails: [{ modality: "TEXT", tokenCount: promptTokens }],
  };
  const fragment = (parts: Json[], final: boolean): Json => ({
    candidates: [{
      content: { parts, role: "model" },
      ...(final ? { finishReason, ...grounding } : {}),
      index: 0,
    }],
    usageMetadata: final ? finalUsage : partialUsage,
    modelVersion: model,
    responseId,
  });

  if (!stream) return Response.json(fragment(fragments.flat(), true));
  const sse = url.searchParams.get("alt") === "sse";
  async function* events(): AsyncGenerator<string> {
    for (const [i, parts] of fragments.entries()) {
      const json = JSON.stringify(fragment(parts, i === fragments.length - 1));
      if (sse) yield encodeSse(json, undefined, "\r\n");
      else yield `${i === 0 ? "[" : ",\r\n"}${json}\n`;
    }
    if (!sse) yield "]";
  }
  return new Response(sseBody(events, d), {
    headers: { "content-type": sse ? "text/event-stream" : "application/json; charset=UTF-8" },
  });
}
