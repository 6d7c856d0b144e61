/**
 * Helpers for the converters' unit tests: feed a stream's text to a decoder split at every byte
 * boundary (it must give the same canonical events whatever the split), and read what an encoder
 * writes.
 */
import assert from "node:assert/strict";
import { SseScanner } from "../../src/http/sse.ts";
import { JsonArrayScanner } from "../../src/http/json_array.ts";
import type { AnswerInfo, StreamDecoder, StreamEncoder } from "../../src/translate/codec.ts";
import type { CanonicalEvent } from "../../src/translate/ir.ts";
import { toToken } from "../../src/translate/opaque.ts";

export type DecoderFactory = (emit: (event: CanonicalEvent) => void) => StreamDecoder;

/** A client answer's fixed identity. */
export const INFO: AnswerInfo = { id: "ans_1", model: "client-model", created: 1, token: toToken };

function decodeSplit(
  factory: DecoderFactory,
  bytes: Uint8Array,
  at: number,
  framing: "sse" | "json-array",
): CanonicalEvent[] {
  const events: CanonicalEvent[] = [];
  const decoder = factory((e) => events.push(e));
  const scanner = framing === "sse"
    ? new SseScanner((e) => decoder.push(e))
    : new JsonArrayScanner((e) => decoder.push(e));
  scanner.push(bytes.subarray(0, at));
  scanner.push(bytes.subarray(at));
  scanner.end();
  decoder.end();
  return events;
}

/** The events of `text`, checked identical at every byte split. */
export function decodeEverySplit(
  factory: DecoderFactory,
  text: string,
  framing: "sse" | "json-array" = "sse",
): CanonicalEvent[] {
  const bytes = new TextEncoder().encode(text);
  const whole = decodeSplit(factory, bytes, bytes.length, framing);
  for (let at = 0; at < bytes.length; at++) {
    assert.deepEqual(decodeSplit(factory, bytes, at, framing), whole, `split at byte ${at}`);
  }
  return whole;
}

/** What an encoder writes for `events` (then `fail` when asked). */
export function encodeAll(
  factory: (write: (text: string) => void) => StreamEncoder,
  events: CanonicalEvent[],
  failWith?: string,
): string {
  let out = "";
  const encoder = factory((t) => out += t);
  for (const event of events) encoder.push(event);
  if (failWith) encoder.fail(failWith);
  return out;
}

/** A canonical stream with text and two parallel tool calls whose arguments interleave. */
export const PARALLEL: CanonicalEvent[] = [
  { type: "start", id: "up_1", model: "m" },
  { type: "text-start", id: "t" },
  { type: "text-delta", id: "t", delta: "Checking." },
  { type: "text-end", id: "t" },
  { type: "tool-input-start", id: "call_a", name: "get_weather" },
  { type: "tool-input-start", id: "call_b", name: "get_time" },
  { type: "tool-input-delta", id: "call_a", delta: '{"city":' },
  { type: "tool-input-delta", id: "call_b", delta: '{"zone":"UTC"}' },
  { type: "tool-input-delta", id: "call_a", delta: '"Paris"}' },
  { type: "tool-input-end", id: "call_b" },
  { type: "tool-input-end", id: "call_a" },
  {
    type: "finish",
    reason: "tool-calls",
    usage: { input: 100, cacheRead: 40, cacheWrite: 0, output: 30, reasoning: 10 },
  },
];
