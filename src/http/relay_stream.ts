/**
 * A relayed stream: the upstream's body read a chunk at a time and run through the stages of
 * `relay.ts` in step, one chunk through every stage before the next is read — a stream hop per
 * stage would cost each chunk a few microseconds more, and, above all, every unit read must have
 * been through the meter when a cut stream is settled. What the stages send is the client's body.
 *
 * A stream ends one of three ways, and `onEnd` runs exactly once, before the client sees the end:
 * - `done`: the upstream ended and every stage saw it finish;
 * - `cut`: the upstream failed, ended unfinished, sent a unit that could not be read, went quiet
 *   for `idleMs`, ran past `maxMs`, or the server is draining — the client gets the last stage's
 *   error tail (the protocol's error event), unless the upstream's own error unit was the last
 *   one passed on: that error is the end, and no second one is added. A cut is settled at once,
 *   even while the client is not reading;
 * - `cancel`: the client went away; the upstream request is aborted.
 *
 * With `abortFailed`, a body that ends in the protocol's error (a cut, or a finished stream whose
 * last stage wrote an error) is then aborted — a transport error, not the clean end of the body —
 * once the client has been handed every byte before it (see `BodyAborted`).
 *
 * Each open stream is one `Relay`: its state in fields and its steps as methods, not a closure
 * each (an open stream holds what it needs and little more: see `docs/benchmark.md`).
 */
import { type ChunkReader, chunkReader } from "./bytes.ts";
import { deadline } from "./deadlines.ts";
import type { LiveEntry, LiveList } from "./live_list.ts";
import { type RelayStages, Unfinished, type UnitOutput } from "./relay.ts";
import { log } from "../log.ts";

/** How a relayed stream ended (see the module's doc). */
export type StreamEnd = "done" | "cut" | "cancel";

/** Why a stream was cut, for the log. */
export type CutReason =
  | "upstream_error"
  | "upstream_ended"
  | "idle_timeout"
  | "max_duration"
  | "drain";

/** A stream in flight that the server can cut (on drain). */
export interface LiveStream {
  cut(why: CutReason): void;
}

/**
 * The error a body ends with after its protocol's error when `RelayOptions.abortFailed` is set:
 * the HTTP server aborts the response there (a chunked body gets no last chunk), so every client
 * sees a failed transfer rather than a clean end. Expected, and already logged as the stream's
 * end: the server's error handler, which hears of it, lets it pass.
 */
export class BodyAborted extends Error {
  constructor() {
    super("the stream ended in an error");
    this.name = "BodyAborted";
  }
}

/** Where the last stage's bytes go: the client's body. */
interface BytesSink {
  send(bytes: Uint8Array): void;
}

/**
 * A stage's controller in `InStep`: its `enqueue` is the next stage's `transform`, or the sink's
 * call after the last stage. One object a stage, no closures: it lives as long as its stream.
 */
class StepController implements TransformStreamDefaultController<unknown> {
  readonly desiredSize = 1;

  constructor(
    private readonly next: Transformer<unknown, unknown> | null,
    private readonly nextController: StepController | null,
    private readonly sink: BytesSink,
  ) {}

  enqueue(chunk: unknown): void {
    if (this.next) this.next.transform!(chunk, this.nextController!);
    else this.sink.send(chunk as Uint8Array);
  }

  error(reason: unknown): never {
    throw reason;
  }

  terminate(): never {
    throw new Error("a relay stage cannot terminate its stream");
  }
}

/** Synchronous stages, each `enqueue` the next one's `transform` (see the module's doc). */
class InStep {
  readonly #stages: Transformer<unknown, unknown>[];
  readonly #controllers: StepController[];

  constructor(stages: Transformer<unknown, unknown>[], sink: BytesSink) {
    this.#stages = stages;
    const controllers: StepController[] = [];
    for (let i = stages.length - 1; i >= 0; i--) {
      controllers.unshift(new StepController(stages[i + 1] ?? null, controllers[0] ?? null, sink));
    }
    this.#controllers = controllers;
  }

  /** One upstream chunk through every stage. Throws what a stage could not take. */
  transform(bytes: Uint8Array): void {
    this.#stages[0].transform!(bytes, this.#controllers[0]);
  }

  /** The upstream ended: each stage's end, in order. Throws `Unfinished` for an unfinished stream. */
  flush(): void {
    this.#stages.forEach((stage, i) => void stage.flush?.(this.#controllers[i]));
  }

  /** The stream was cut: the last stage's error tail. */
  cut(started: boolean): void {
    const last = this.#stages.length - 1;
    (this.#stages[last] as UnitOutput).cut(
      started,
      this.#controllers[last] as TransformStreamDefaultController<Uint8Array>,
    );
  }

  /** Whether the last stage's output of a finished stream ends in the protocol's error. */
  failed(): boolean {
    return (this.#stages[this.#stages.length - 1] as UnitOutput).failed?.() ?? false;
  }
}

/** How a relayed stream is bounded, and what it tells its owner. */
export interface RelayOptions {
  /** Aborts the upstream request (the client went away, or the stream was cut). */
  abort(): void;
  /** Awaited before the client sees the end of the stream (so settlement is committed first). */
  onEnd(how: StreamEnd, why?: CutReason): void | Promise<void>;
  /** Longest silence between upstream chunks, ms (0: none). */
  idleMs: number;
  /** Longest a stream may run, ms (0: none). */
  maxMs: number;
  /** Live streams, so a draining server can cut them; the relay adds and removes itself. */
  live?: LiveList<LiveStream>;
  /**
   * A body that ends in the protocol's error (cut, or `UnitOutput.failed`) is aborted after it,
   * with `BodyAborted`, instead of closed: for clients that take an error element followed by a
   * clean end for a success (Google's older SDKs).
   */
  abortFailed?: boolean;
}

/** Nothing to stop (a limit not set). */
const NOTHING = () => {};

/** One relayed stream: the source of the client's body, and a stream the server can cut. */
class Relay implements UnderlyingDefaultSource<Uint8Array>, LiveStream, BytesSink {
  readonly #reader: ChunkReader;
  readonly #options: RelayOptions;
  readonly #units: InStep;
  readonly #entry: LiveEntry | undefined;
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  /** Bytes were sent. */
  #started = false;
  /** Bytes were sent for the chunk being read. */
  #sent = false;
  #cutReason: CutReason | null = null;
  /** When the pending upstream read began (null while none is pending: the client is slow). */
  #waitingSince: number | null = null;
  #stopIdle = NOTHING;
  #stopMax = NOTHING;
  /** The client's stream is closed (or being closed): nothing more is sent. */
  #closed = false;
  /** A pull is in progress: the client is reading. */
  #reading = false;
  /** The body is to be aborted once the client has read what is queued (see `abortFailed`). */
  #aborting = false;
  #ended = false;

  constructor(upstream: ReadableStream<Uint8Array>, stages: RelayStages, options: RelayOptions) {
    this.#reader = chunkReader(upstream);
    this.#options = options;
    this.#units = new InStep(stages as Transformer<unknown, unknown>[], this);
    this.#entry = options.live?.add(this);
    // An upstream that fails while no read is pending (its client is slow to read) is cut then, so
    // the call is settled at once, not when the client reads again: an errored stream has dropped
    // what it had queued, so a later read would only have failed. (While the client reads, the
    // read in progress sees the failure, after the chunk it may have in hand.)
    this.#reader.closed.catch(() => {
      if (!this.#reading) this.cut("upstream_error");
    });
    // Both limits are checked by the shared deadline sweep (no timer per stream).
    if (options.maxMs > 0) this.#stopMax = deadline(options.maxMs, () => this.cut("max_duration"));
    if (options.idleMs > 0) this.#stopIdle = deadline(options.idleMs, () => this.#checkIdle());
  }

  start(controller: ReadableStreamDefaultController<Uint8Array>): void {
    this.#controller = controller;
  }

  async pull(): Promise<void> {
    if (this.#aborting) return this.#controller.error(new BodyAborted());
    if (this.#closed) return;
    this.#reading = true;
    try {
      await this.#readOn();
    } finally {
      this.#reading = false;
    }
  }

  async cancel(reason: unknown): Promise<void> {
    this.#closed = true;
    this.#options.abort();
    await Promise.all([this.#end("cancel"), this.#reader.cancel(reason).catch(() => {})]);
  }

  /** The last stage's bytes, for the client. */
  send(bytes: Uint8Array): void {
    this.#started = true;
    this.#sent = true;
    this.#controller.enqueue(bytes);
  }

  cut(why: CutReason): void {
    if (this.#cutReason || this.#ended) return;
    this.#cutReason = why;
    this.#options.abort();
    this.#reader.cancel().catch(() => {});
    // A client that is not reading would otherwise leave the call unsettled until it reads again.
    if (!this.#reading) {
      this.#finishCut(why).catch((error) =>
        log("error", "settling a cut stream failed", { error: String(error) })
      );
    }
  }

  /** One deadline per idle period, not one per chunk: it looks at how long the current read waits. */
  #checkIdle(): void {
    const idleMs = this.#options.idleMs;
    const waited = this.#waitingSince === null ? 0 : Date.now() - this.#waitingSince;
    if (waited >= idleMs) this.cut("idle_timeout");
    else this.#stopIdle = deadline(idleMs - waited, () => this.#checkIdle());
  }

  /** Ends the client's body: closed, or — when it ends in an error — aborted (see `abortFailed`). */
  #endBody(failed: boolean): void {
    const controller = this.#controller;
    if (!failed || !this.#options.abortFailed) return controller.close();
    // Erroring a stream drops what is still queued in it: with bytes queued, the error waits for
    // the next pull, which comes once the client has taken them all.
    if ((controller.desiredSize ?? 0) < 1) this.#aborting = true;
    else controller.error(new BodyAborted());
  }

  async #end(how: StreamEnd, why?: CutReason): Promise<void> {
    if (this.#ended) return;
    this.#ended = true;
    this.#stopIdle();
    this.#stopMax();
    this.#entry?.remove();
    try {
      await this.#options.onEnd(how, why);
    } catch (error) {
      log("error", "ending a stream failed", { error: String(error) });
    }
  }

  /** Settles a cut stream and ends it with the error tail (once). */
  async #finishCut(why: CutReason): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#end("cut", why);
    this.#units.cut(this.#started);
    this.#endBody(true);
  }

  /**
   * A unit a stage could not take: the stream is cut there. Unless the client went away meanwhile:
   * Deno's server cancels a body from within its `enqueue` when the client's connection is gone,
   * so the chunk's next unit finds the body closed — the call has ended as cancelled, and that
   * failure is not the upstream's.
   */
  #unreadable(error: unknown): Promise<void> {
    if (this.#closed) return Promise.resolve();
    log("warn", "an upstream stream unit could not be read", { error: String(error) });
    this.#cutReason = "upstream_error";
    this.#options.abort();
    this.#reader.cancel().catch(() => {});
    return this.#finishCut(this.#cutReason);
  }

  /** Reads until something can be sent, or the stream ends. */
  async #readOn(): Promise<void> {
    for (;;) {
      let result: ReadableStreamReadResult<Uint8Array>;
      this.#waitingSince = Date.now();
      try {
        result = await this.#reader.read();
      } catch {
        return await this.#finishCut(this.#cutReason ?? "upstream_error");
      } finally {
        this.#waitingSince = null;
      }
      if (this.#cutReason) return await this.#finishCut(this.#cutReason);
      // The client went away while the read was pending: its call has ended (settled for what was
      // sent), and what came meanwhile goes no further — not read, not sent.
      if (this.#closed) return;
      if (result.done) {
        try {
          this.#units.flush();
        } catch (error) {
          if (error instanceof Unfinished) return await this.#finishCut("upstream_ended");
          return await this.#unreadable(error);
        }
        this.#closed = true;
        await this.#end("done");
        this.#endBody(this.#units.failed());
        return;
      }
      this.#sent = false;
      try {
        this.#units.transform(result.value);
      } catch (error) {
        return await this.#unreadable(error);
      }
      if (this.#sent) return;
    }
  }
}

/** Relays an upstream streamed body through `stages` into the body we send to the client. */
export function relayStream(
  upstream: ReadableStream<Uint8Array>,
  stages: RelayStages,
  options: RelayOptions,
): ReadableStream<Uint8Array> {
  // Read one chunk ahead of the client.
  return new ReadableStream<Uint8Array>(new Relay(upstream, stages, options), { highWaterMark: 1 });
}
