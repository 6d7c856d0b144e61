/**
 * `deno bench --lock=tests/deno.lock bench/chat_stream_bench.ts`: what a translated stream costs the gateway per upstream
 * stream when the upstream speaks chat completions and the client Messages ("messages → chat SSE"):
 * the upstream's SSE scanned, each event read by the chat meter and decoded and encoded by the
 * `Transcoder`, as the relay does. "plain" is the gateway as it is (text chunks read by
 * `plainDelta`); "parse" parses every chunk, as before it. The streams: the emulator's chunks
 * (member for member) with the bench scenario's 13 text chunks, and with 200; OpenAI's (its
 * members' order, `obfuscation` on every chunk) with 200.
 */
import { SseScanner } from "../src/http/sse.ts";
import { chat } from "../src/protocols/chat/index.ts";
import { chatDecoder } from "../src/protocols/chat/stream.ts";
import { chatMeter } from "../src/protocols/chat/usage.ts";
import { messages } from "../src/protocols/messages/index.ts";
import type { StreamMeter } from "../src/billing/usage.ts";
import type { Codec } from "../src/translate/codec.ts";
import { Transcoder } from "../src/translate/transcode.ts";
import { toToken } from "../src/translate/opaque.ts";
import { perEvent } from "./sse_chunks.ts";

const WORDS = [
  "You",
  " said",
  ":",
  " Write",
  " one",
  " sentence",
  " about",
  ' "trains"',
  " é",
  ".",
];

type Json = Record<string, unknown>;

/** A chat stream with `pieces` as its text chunks: OpenAI's members and their order, or the emulator's. */
function chatStream(pieces: string[], openai: boolean): Uint8Array {
  const common: Json = openai
    ? {
      id: "chatcmpl-Dx0XpqH8w09uBXwq1zFGYdETjtnEl",
      object: "chat.completion.chunk",
      created: 1782955817,
      model: "gpt-4o-mini-2024-07-18",
      service_tier: "default",
      system_fingerprint: "fp_d0469e1700",
    }
    : {
      id: "chatcmpl-d7699127402a60666b6a8b3c69e4e8",
      created: 1795648326,
      model: "gpt-5.4",
      service_tier: "default",
      system_fingerprint: "fp_emulator",
      object: "chat.completion.chunk",
    };
  let n = 0;
  const chunk = (choices: unknown[], usage: unknown = null) =>
    "data: " + JSON.stringify({
      ...common,
      choices,
      usage,
      ...(openai ? { obfuscation: "Qp" + (n++ % 97) } : {}),
    }) + "\n\n";
  const choice = (delta: unknown, finish: string | null = null) => ({
    index: 0,
    delta,
    logprobs: null,
    finish_reason: finish,
  });
  const usage = {
    prompt_tokens: 13,
    completion_tokens: pieces.length,
    total_tokens: 13 + pieces.length,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0 },
  };
  const text = chunk([choice({ role: "assistant", content: "", refusal: null })]) +
    pieces.map((piece) => chunk([choice({ content: piece })])).join("") +
    chunk([choice({}, "stop")]) + chunk([], usage) + "data: [DONE]\n\n";
  return new TextEncoder().encode(text);
}

const info = { id: "msg_bench", model: "chat-bench", created: 1795648326, token: toToken };

/** Reads no chunk: every one parsed. */
const none = () => undefined;

/** The two ways of reading a chat upstream: its codec and meter. */
const READERS: Record<string, { upstream: Codec; meter: () => StreamMeter }> = {
  plain: { upstream: chat, meter: () => chatMeter() },
  parse: {
    upstream: { ...chat, streamDecoder: (emit, provider) => chatDecoder(emit, provider, none) },
    meter: () => chatMeter(false, none),
  },
};

/** One stream through the meter and the transcoder, chunk by chunk as it came. */
function translate(chunks: Uint8Array[], reader: typeof READERS.plain): string {
  const meter = reader.meter();
  const transcoder = new Transcoder(
    { upstream: reader.upstream, client: messages, provider: "bench", info },
    { shown: () => null, readable: () => true },
  );
  let out = "";
  const scanner = new SseScanner((event) => {
    meter.onEvent(event);
    out += transcoder.unit(event) ?? "";
  });
  for (const chunk of chunks) scanner.push(chunk);
  scanner.end();
  return out + transcoder.end();
}

const pieces = (n: number) => Array.from({ length: n }, (_, i) => WORDS[i % WORDS.length]);
const STREAMS: [string, Uint8Array[]][] = [
  ["emulator, 13 text chunks", perEvent(chatStream(pieces(13), false))],
  ["emulator, 200 text chunks", perEvent(chatStream(pieces(200), false))],
  ["OpenAI, 200 text chunks", perEvent(chatStream(pieces(200), true))],
];

for (const [stream, chunks] of STREAMS) {
  if (translate(chunks, READERS.plain) !== translate(chunks, READERS.parse)) {
    throw new Error(`${stream}: the two readings differ`);
  }
  for (const [name, reader] of Object.entries(READERS)) {
    Deno.bench(`${name.padEnd(5)} ${stream}`, { group: stream, baseline: name === "parse" }, () => {
      translate(chunks, reader);
    });
  }
}
