/**
 * The skeleton every protocol's stream encoder is built on (pure): what each one keeps — whether
 * the stream is open, whether it has ended, the usage so far — and the order it writes in. The
 * opening comes once, before anything else; usage updates are merged as they come; the finish
 * comes with the final usage (the finish's own, else the merged one), and nothing after it; an
 * error (the upstream's error event, or `fail`) ends the stream in the protocol's own form, and
 * nothing after it. A protocol gives what it writes at each step (`EncoderWriter`).
 */
import type { StreamEncoder } from "./codec.ts";
import type { CanonicalEvent, TokenUsage } from "./ir.ts";
import { zeroUsage } from "./ir.ts";

/** The canonical events of an answer's content: blocks (start, delta, end) and hosted calls. */
export type ContentEvent = Exclude<
  CanonicalEvent,
  { type: "start" | "usage" | "finish" | "error" }
>;

/** What a protocol's stream encoder writes at each step of the skeleton. */
export interface EncoderWriter {
  /** The stream's opening, with the usage so far; none when the protocol writes none. */
  open?(usage: TokenUsage): void;
  /** One event of the answer's content; `open` writes the opening first, where the event needs it. */
  content(event: ContentEvent, open: () => void): void;
  /** The answer's end (the stream is open by then) with its final usage. */
  finish(event: Extract<CanonicalEvent, { type: "finish" }>, usage: TokenUsage): void;
  /** The protocol's own error, ending the stream; `event` is the upstream's, when it is one. */
  error(message: string, event?: Extract<CanonicalEvent, { type: "error" }>): void;
}

/** A stream encoder that writes through `writer` in the skeleton's order. */
export function streamEncoder(writer: EncoderWriter): StreamEncoder {
  let opened = false;
  let done = false;
  let usage = zeroUsage();
  const open = () => {
    if (opened) return;
    opened = true;
    writer.open?.(usage);
  };
  return {
    push(event) {
      if (done) return;
      switch (event.type) {
        case "start":
          if (event.usage) usage = { ...usage, ...event.usage };
          return open();
        case "usage":
          usage = { ...usage, ...event.usage };
          return;
        case "finish":
          open();
          done = true;
          return writer.finish(event, event.usage ?? usage);
        case "error":
          done = true;
          return writer.error(event.message, event);
        default:
          return writer.content(event, open);
      }
    },
    fail(message) {
      if (done) return;
      done = true;
      writer.error(message);
    },
  };
}
