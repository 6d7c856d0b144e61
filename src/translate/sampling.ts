/**
 * Sampling parameters and limits (pure): the canonical request's plain values — the output cap,
 * temperature, top-p, top-k, seed, the penalties, stop sequences and the answers asked for — and
 * the field that carries each in every protocol, in one table that every codec reads and writes
 * through. A protocol without a field for a parameter (Responses' `top_k`, Messages' `seed`)
 * neither reads nor writes it: a hint with no field on the other side is not sent, and noted as
 * an adaptation (`top_k_dropped`, `seed_dropped`…).
 */
import { optionalNumber, stringList } from "../http/json.ts";
import { type Adapt, type AdaptationKind, fieldOf, IGNORED } from "./adaptations.ts";
import type { Target } from "./codec.ts";
import { inexpressible } from "./inexpressible.ts";
import { orderedSchema } from "./schema_order.ts";
import type { CanonicalRequest, Json, NamedMember, ProtocolId, SamplingKey } from "./ir.ts";

/** A request's sampling parameters. */
export type Sampling = Pick<CanonicalRequest, SamplingKey>;

/**
 * Each protocol's fields for the sampling parameters, in the order its codec reads them. Where a
 * protocol takes several names for one (chat's output cap), the first present one is read and the
 * first is written; Gemini's are members of `generationConfig`, read in either spelling.
 */
export const SAMPLING_FIELDS: Record<ProtocolId, Partial<Record<SamplingKey, string | string[]>>> =
  {
    responses: {
      maxOutputTokens: "max_output_tokens",
      temperature: "temperature",
      topP: "top_p",
    },
    messages: {
      maxOutputTokens: "max_tokens",
      temperature: "temperature",
      topP: "top_p",
      topK: "top_k",
      stop: "stop_sequences",
    },
    chat: {
      maxOutputTokens: ["max_completion_tokens", "max_tokens"],
      temperature: "temperature",
      topP: "top_p",
      seed: "seed",
      presencePenalty: "presence_penalty",
      frequencyPenalty: "frequency_penalty",
      stop: "stop",
      choices: "n",
    },
    generate: {
      maxOutputTokens: "maxOutputTokens",
      temperature: "temperature",
      topP: "topP",
      topK: "topK",
      seed: "seed",
      presencePenalty: "presencePenalty",
      frequencyPenalty: "frequencyPenalty",
      choices: "candidateCount",
      stop: "stopSequences",
    },
  };

/** A protocol's sampling fields as (parameter, names) pairs, in its order. */
function fieldsOf(protocol: ProtocolId): [SamplingKey, string[]][] {
  return Object.entries(SAMPLING_FIELDS[protocol]).map(([key, names]) => [
    key as SamplingKey,
    typeof names === "string" ? [names] : names,
  ]);
}

/** How a decoder reaches a protocol's fields: where they are, and their names in errors. */
export interface SamplingSource {
  /** The member `name` of `from` (Gemini: in either spelling). */
  get?(from: Json, name: string): unknown;
  /** What an error's field name starts with (`generationConfig.`). */
  prefix?: string;
}

/**
 * Reads the protocol's sampling fields of `from` into `request`: numbers (a value of another type
 * is a 400 naming its field), and stop sequences (a string alone is one; none is no field). The
 * name each was read under is recorded in `request.fields`.
 */
export function decodeSampling(
  protocol: ProtocolId,
  from: Json,
  request: CanonicalRequest,
  source: SamplingSource = {},
): void {
  const get = source.get ?? ((value: Json, name: string) => value[name]);
  const prefix = source.prefix ?? "";
  for (const [key, names] of fieldsOf(protocol)) {
    if (key === "stop") {
      const stop = stringList(get(from, names[0]), prefix + names[0]);
      if (stop?.length) request.stop = stop;
      continue;
    }
    for (const name of names) {
      const value = optionalNumber(get(from, name), prefix + name);
      if (value === undefined) continue;
      request[key] = value;
      if (key !== "choices") request.fields[key] = prefix + name;
      break;
    }
  }
}

/** What leaving out a parameter the target has no field for is noted as. */
const DROPPED: Partial<Record<SamplingKey, AdaptationKind>> = {
  temperature: "temperature_dropped",
  topP: "top_p_dropped",
  topK: "top_k_dropped",
  seed: "seed_dropped",
  presencePenalty: "penalties_dropped",
  frequencyPenalty: "penalties_dropped",
};

/**
 * Writes `sampling`'s values into `to` under the protocol's names (`names` overrides some, e.g.
 * chat's output cap by the upstream's dialect). Answers asked for are never written: every
 * encoder asks for one (see `oneAnswer`). A value the protocol has no field for is noted to
 * `adapt` as left out, under the client's name for it in `request`.
 */
export function encodeSampling(
  protocol: ProtocolId,
  sampling: Sampling,
  to: Json,
  names: Partial<Record<SamplingKey, string>> = {},
  adapt: Adapt = IGNORED,
  request?: CanonicalRequest,
): void {
  const fields = SAMPLING_FIELDS[protocol];
  for (const [key, fieldNames] of fieldsOf(protocol)) {
    const value = sampling[key];
    if (key === "choices" || value === undefined) continue;
    if (Array.isArray(value) && !value.length) continue;
    to[names[key] ?? fieldNames[0]] = value;
  }
  for (
    const [key, kind] of Object.entries(DROPPED) as [NamedMember & SamplingKey, AdaptationKind][]
  ) {
    if (sampling[key] === undefined || fields[key]) continue;
    adapt(kind, request ? fieldOf(request, key) : key);
  }
}

/** An encoder's first check: more than one answer per call is refused (`target` names it). */
function oneAnswer(request: CanonicalRequest, target: string): void {
  if ((request.choices ?? 1) > 1) {
    throw inexpressible(request.fields.choices ?? "n", "more than one answer per call", target);
  }
}

/** What a protocol's request encoder does once the request is known to ask for one answer. */
export type BodyEncoder = (request: CanonicalRequest, target: Target, adapt: Adapt) => Json;

/**
 * A protocol's `encodeRequest` (see `Codec`) from its `encode`: every encoder's first check made
 * once — more than one answer per call is refused, `protocol` naming the target (see
 * `oneAnswer`) — and adaptations ignored unless an `adapt` is given.
 */
export function requestEncoder(
  protocol: string,
  encode: BodyEncoder,
): (request: CanonicalRequest, target: Target, adapt?: Adapt) => Json {
  return (request, target, adapt = IGNORED) => {
    oneAnswer(request, protocol);
    return encode(withOrderedSchemas(request), target, adapt);
  };
}

/**
 * `request` with its tools' parameter schemas and its output schema in one keyword order (see
 * `schema_order.ts`): the JSON every encoder writes of them is the same whatever order the client
 * wrote, so a conversation's upstream prefix (and its prompt cache) does not depend on it.
 */
function withOrderedSchemas(request: CanonicalRequest): CanonicalRequest {
  const format = request.responseFormat;
  return {
    ...request,
    tools: request.tools.map((tool) => ({ ...tool, parameters: orderedSchema(tool.parameters) })),
    ...(format?.schema
      ? { responseFormat: { ...format, schema: orderedSchema(format.schema) } }
      : {}),
  };
}
