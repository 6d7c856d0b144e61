/**
 * Emulated Gemini API (`gemini.md`): generateContent, streamGenerateContent (SSE with CRLF-separated
 * data-only events and usage on every fragment, the last one authoritative; or one JSON array
 * without `alt=sse`), countTokens (also of a whole `generateContentRequest`), function calls with
 * thought signatures (checked on Gemini 3 models, as the real API does), thoughts when asked,
 * image output for the image models, the real API's history and schema checks, and errors in
 * Google's envelope.
 */
import { encodeSse } from "../http/sse.ts";
import {
  answer,
  collectText,
  countTokens,
  directives,
  exampleValue,
  newId,
  pickTools,
  sign,
  sleep,
  sseBody,
  stableJson,
  TINY_PNG,
  tokenize,
  toolArguments,
} from "./text.ts";
import { type CacheContext, cacheScope, prefixes, type Segment } from "./prompt_cache.ts";

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
  const raw = await req.json() as Json;
  const whole = raw.generateContentRequest;
  const body = whole && typeof whole === "object" ? whole as Json : raw;
  const tokens = countTokens(promptTexts(body).join(" "));
  return Response.json({
    totalTokens: tokens,
    promptTokensDetails: [{ modality: "TEXT", tokenCount: tokens }],
  });
}

/**
 * The fields of Gemini's `Schema` (function `parameters`), in both spellings the proto-JSON
 * parser takes; anything else (`additionalProperties`, `$schema`, `$ref`, `$defs`, `const`,
 * `exclusiveMinimum`, `propertyNames`, `examples`, and — per `gemini.md` — `default`, `title`,
 * `strict`) is an unknown name.
 */
const SCHEMA_FIELDS = new Set(
  [
    "type",
    "format",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "items",
    "minimum",
    "maximum",
  ].flatMap((name) => [name, name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)]),
);

/** Every key of a `parameters` schema Gemini would not know, as `[field path, name]`. */
function unknownKeys(schema: unknown, path: string, into: [string, string][] = []) {
  if (!schema || typeof schema !== "object" || Array.isArray(schema)) return into;
  for (const [key, value] of Object.entries(schema)) {
    if (!SCHEMA_FIELDS.has(key)) into.push([path, key]);
    else if (key === "properties" && value && typeof value === "object") {
      for (const [n, inner] of Object.values(value).entries()) {
        unknownKeys(inner, `${path}.properties[${n}].value`, into);
      }
    } else if (key === "items") unknownKeys(value, `${path}.items`, into);
    else if ((key === "anyOf" || key === "any_of") && Array.isArray(value)) {
      for (const [n, inner] of value.entries()) unknownKeys(inner, `${path}.any_of[${n}]`, into);
    }
  }
  return into;
}

/** Gemini's 400 for unknown fields: one line per field, with the `BadRequest` details. */
function unknownFields(found: [string, string][]): Response {
  const lines = found.map(([path, name]) =>
    `Invalid JSON payload received. Unknown name "${name}" at '${path}': Cannot find field.`
  );
  return Response.json({
    error: {
      code: 400,
      message: lines.join("\n"),
      status: "INVALID_ARGUMENT",
      details: [{
        "@type": "type.googleapis.com/google.rpc.BadRequest",
        fieldViolations: found.map(([path], i) => ({ field: path, description: lines[i] })),
      }],
    },
  }, { status: 400 });
}

/** Gemini 3 models check thought signatures; 1.x and 2.x do not. */
const SIGNATURES_CHECKED = (model: string) => !/gemini-(1|2)(\.|-)/.test(model);

/** Google's documented value for calls whose history came from elsewhere. */
const SKIP = "skip_thought_signature_validator";

/** The thought signature the emulator issues for a call: an HMAC of its name and arguments. */
function callSignature(call: Json): string {
  return sign("Cu", `${String(call.name)}\n${stableJson(call.args ?? {})}`);
}

/** A request's function declarations (either spelling of the field). */
function declarationsOf(body: Json): Json[][] {
  return ((body.tools ?? []) as Json[]).map((t) =>
    (t.functionDeclarations ?? t.function_declarations ?? []) as Json[]
  );
}

/**
 * Requests the real API rejects: roles other than user and model, function declarations with
 * schema keywords `parameters` has no field for, a function-response turn whose parts do not
 * match the calls of the turn before, and (Gemini 3) a model turn whose first call carries no
 * thought signature the API issued for that call (or the documented skip value).
 */
function invalidRequest(body: Json, contents: Content[], model: string): Response | undefined {
  const found: [string, string][] = [];
  for (const [i, declarations] of declarationsOf(body).entries()) {
    for (const [j, decl] of declarations.entries()) {
      unknownKeys(decl.parameters, `tools[${i}].function_declarations[${j}].parameters`, found);
    }
  }
  if (found.length) return unknownFields(found);
  for (const [i, content] of contents.entries()) {
    if (content.role !== undefined && content.role !== "user" && content.role !== "model") {
      return googleError(400, "Please use a valid role: user, model.");
    }
    const parts = content.parts ?? [];
    const calls = parts.filter((p) => "functionCall" in p);
    if (content.role === "model" && calls.length && SIGNATURES_CHECKED(model)) {
      const first = calls[0];
      const signature = first.thoughtSignature ?? first.thought_signature;
      const call = (first.functionCall ?? {}) as Json;
      if (signature == null) {
        return googleError(
          400,
          `Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call \`default_api:${
            String(call.name)
          }\` , position ${
            i + 1
          }. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.`,
        );
      }
      if (signature !== SKIP && signature !== callSignature(call)) {
        // The real API's words for a signature it did not issue (or one moved to another call).
        return googleError(400, "Corrupted thought signature.");
      }
    }
    const responses = parts.filter((p) => "functionResponse" in p).length;
    if (responses) {
      const previous = contents[i - 1];
      const asked = previous && previous.role !== "user"
        ? (previous.parts ?? []).filter((p) => "functionCall" in p).length
        : 0;
      if (asked !== responses) {
        return googleError(
          400,
          "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.",
        );
      }
    }
  }
  return undefined;
}

/** What a tool answered, as text: its single string field, else its JSON. */
function resultText(part: Json | undefined): string {
  const response = (part?.functionResponse as Json | undefined)?.response;
  if (response && typeof response === "object") {
    const values = Object.values(response);
    if (values.length === 1 && typeof values[0] === "string") return values[0];
  }
  return JSON.stringify(response ?? null);
}

/** The smallest prefix a model caches implicitly (none before Gemini 2.5). */
function minimumCached(model: string): number {
  if (/^gemini-2\.5-/.test(model)) return 2048;
  if (/^gemini-[3-9]/.test(model)) return 4096;
  return Infinity;
}

/**
 * The tokens Gemini's implicit cache reads for a request (its system instruction, tools, then
 * each content: 2 tokens of structure and its text), at most `total`.
 */
function cachedPrompt(body: Json, model: string, total: number, cache: CacheContext): number {
  const min = minimumCached(model);
  if (total < min) return 0;
  const segments: Segment[] = [body.systemInstruction, body.tools].map((part) => ({
    text: JSON.stringify(part ?? null),
    tokens: countTokens(collectText(part).join(" ")),
  }));
  for (const content of (Array.isArray(body.contents) ? body.contents : []) as Content[]) {
    segments.push({
      text: JSON.stringify(content),
      tokens: 2 + countTokens(collectText(content).join(" ")),
    });
  }
  const scope = cacheScope(cache.provider, cache.key, model);
  return Math.min(cache.cache.automatic(scope, prefixes("", segments), min, 1, "5m"), total);
}

/**
 * `…:generateContent` and `…:streamGenerateContent`; `cache`: the prompt cache of the request's
 * key (implicit caching).
 */
export async function generate(
  req: Request,
  model: string,
  stream: boolean,
  cache?: CacheContext,
): Promise<Response> {
  const url = new URL(req.url);
  const body = await req.json() as Json;
  const d = directives(promptTexts(body));
  await sleep(d.wait);
  if (d.context) {
    return googleError(
      400,
      "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
    );
  }
  if (d.status) return googleError(d.status, `Emulated error ${d.status}.`);
  const contents = (Array.isArray(body.contents) ? body.contents : []) as Content[];
  if (!contents.length) {
    return googleError(400, "* GenerateContentRequest.contents: contents is not specified");
  }
  const invalid = invalidRequest(body, contents, model);
  if (invalid) return invalid;
  const config = (body.generationConfig ?? {}) as Json;
  const modalities = (config.responseModalities ?? ["TEXT"]) as string[];
  const imageSize = String((config.imageConfig as Json | undefined)?.imageSize ?? "1K");
  const promptTokens = countTokens(promptTexts(body).join(" ")) + 2 * contents.length;
  const cached = d.cached === undefined && cache
    ? cachedPrompt(body, model, promptTokens, cache)
    : Math.min(d.cached ?? 0, promptTokens);

  const last = contents.at(-1)?.parts ?? [];
  const answeredTool = last.some((p) => "functionResponse" in p);
  const declarations = declarationsOf(body).flat();
  const wantsImage = model.includes("image") && modalities.includes("IMAGE");
  const lastText = answeredTool
    ? `the tool returned ${resultText(last.find((p) => "functionResponse" in p))}`
    : collectText(last.filter((p) => "text" in p)).join(" ");

  const json = config.responseMimeType === "application/json";
  const jsonSchema = config.responseJsonSchema ?? config.responseSchema;
  const text = !json
    ? answer(lastText, d)
    : jsonSchema
    ? JSON.stringify(exampleValue(jsonSchema))
    : JSON.stringify({ answer: answer(lastText, d) });
  let textPieces = wantsImage && !modalities.includes("TEXT") ? [] : tokenize(text);
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
  const calling = ((body.toolConfig as Json | undefined)?.functionCallingConfig ?? {}) as Json;
  const allowed = calling.allowedFunctionNames as string[] | undefined;
  const called = answeredTool || calling.mode === "NONE"
    ? []
    : pickTools(declarations, (f) => String(f.name), d, {
      forced: calling.mode === "ANY" && allowed?.length === 1 ? allowed[0] : undefined,
    });
  const thinking = (config.thinkingConfig as Json | undefined)?.includeThoughts === true;
  if (thinking) {
    fragments.push([{ text: "Considering the request.", thought: true }]);
    thoughts = 12;
  }
  if (called.length) {
    fragments.push(called.map((fn, i) => {
      const args = toolArguments(
        fn.parameters ?? fn.parametersJsonSchema ?? fn.parameters_json_schema,
        d,
      );
      const call = { name: fn.name, args };
      // The first call of a turn carries the signature (as Gemini 3 sends it; 2.5 does too).
      return { functionCall: call, ...(i === 0 ? { thoughtSignature: callSignature(call) } : {}) };
    }));
    thoughts += 24;
  } else {
    for (let i = 0; i < textPieces.length; i += 3) {
      fragments.push([{ text: textPieces.slice(i, i + 3).join("") }]);
    }
    if (wantsImage) {
      imageOut = imageTokens(model, imageSize);
      fragments.push([{ inlineData: { mimeType: "image/png", data: TINY_PNG } }]);
    }
  }
  const textOut = called.length ? 8 * called.length : textPieces.length;
  const candidatesTokens = textOut + imageOut;
  const responseId = newId("", 22);
  const finalUsage: Json = {
    promptTokenCount: promptTokens,
    candidatesTokenCount: candidatesTokens,
    totalTokenCount: promptTokens + candidatesTokens + thoughts,
    ...(cached
      ? {
        cachedContentTokenCount: cached,
        cacheTokensDetails: [{ modality: "TEXT", tokenCount: cached }],
      }
      : {}),
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
