/**
 * A translated stream, decode ∘ encode: each upstream unit decoded by the upstream protocol's
 * stream decoder into canonical events, and those encoded by the client protocol's encoder — in
 * step, one unit in, the client's text out (the relay's `RewriteUnits` runs it, see
 * `http/relay.ts`). A stream that makes no answer — no finish, or a finish with nothing readable
 * before it — ends in the client protocol's error instead; so does one that was cut.
 */
import type { SseEvent } from "../http/sse.ts";
import type { UnitRewriter } from "../http/relay.ts";
import type { AnswerInfo, Codec, StreamDecoder, StreamEncoder } from "./codec.ts";
import { collect, type Collector } from "./collect.ts";
import type { CanonicalResponse, TokenUsage } from "./ir.ts";

/** The two sides of a translation and what the client's encoder writes into its answer. */
export interface TranscodeSides {
  /** The upstream's protocol: decodes its units. */
  upstream: Codec;
  /** The client's protocol: encodes the canonical events. */
  client: Codec;
  /** The provider's name, which tags the opaque state of its answer. */
  provider: string;
  info: AnswerInfo;
}

/** What a transcoded stream asks of its call as it goes. */
export interface TranscodeHooks {
  /** At the finish: the usage the client is to be shown instead of the upstream's, or null. */
  shown(): TokenUsage | null;
  /** Whether anything of the stream was read (output or usage): a finish without it is no answer. */
  readable(): boolean;
  /** The whole answer, once the stream finished with one (a conversation the gateway keeps). */
  answer?(response: CanonicalResponse): void;
}

/** decode ∘ encode, unit by unit (see the module's doc). */
export class Transcoder implements UnitRewriter {
  #out = "";
  readonly #encoder: StreamEncoder;
  readonly #decoder: StreamDecoder;
  readonly #collector: Collector | undefined;
  /** The upstream's stream made an answer: its finish was decoded, after output or usage. */
  #answered = false;
  /** The client was sent the protocol's error: nothing more is encoded. */
  #failed = false;
  /** The upstream's stream carried an error, which the client was sent in its protocol. */
  #errored = false;

  constructor(sides: TranscodeSides, private readonly hooks: TranscodeHooks) {
    this.#collector = hooks.answer ? collect() : undefined;
    this.#encoder = sides.client.streamEncoder((text) => {
      this.#out += text;
    }, sides.info);
    this.#decoder = sides.upstream.streamDecoder((event) => {
      if (this.#failed) return;
      if (event.type === "finish") {
        // A finish with neither output nor usage before it: nothing was read (a stream of `null`s).
        if (!hooks.readable()) return this.#fail();
        this.#answered = true;
        const usage = hooks.shown();
        if (usage) event = { ...event, usage };
      }
      this.#collector?.push(event);
      this.#encoder.push(event);
      if (event.type === "error" && !this.#answered) this.#errored = true;
    }, sides.provider);
  }

  /** Whether the upstream's stream made an answer (else the client was sent an error). */
  answered(): boolean {
    return this.#answered;
  }

  /** Whether what the client was sent ends in its protocol's error. */
  failed(): boolean {
    return this.#failed || this.#errored;
  }

  unit(event: SseEvent): string | null {
    this.#decoder.push(event);
    return this.#take() || null;
  }

  end(): string {
    this.#decoder.end();
    if (!this.#answered) {
      // Nothing of the upstream's stream could be read as an answer: the client is told so.
      if (!this.#failed) this.#fail();
      return this.#take();
    }
    const answer = this.#collector?.result();
    if (answer) this.hooks.answer!(answer);
    return this.#take();
  }

  cut(): Uint8Array | undefined {
    this.#encoder.fail("The upstream provider ended the stream unexpectedly.");
    const text = this.#take();
    return text ? new TextEncoder().encode(text) : undefined;
  }

  #fail(): void {
    this.#failed = true;
    this.#encoder.fail("The upstream provider's stream could not be read.");
  }

  #take(): string {
    const text = this.#out;
    this.#out = "";
    return text;
  }
}
