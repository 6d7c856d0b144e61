/**
 * Message threads of the emulated Anthropic API, as Anthropic documents the beta
 * (`anthropic-beta: message-threads-2026-08-12`): a request with `thread: {"type": "create"}` has
 * its conversation — `system`, `tools`, its messages and the answer — held under the answer's `id`;
 * one with `thread: {"type": "continue", "previous_message_id"}` sends only the messages since
 * that answer, without `system` and `tools` (the thread keeps them), and the model sees the whole
 * conversation (its usage counts all of it). A thread expires 5 minutes after its last request;
 * each answer can be continued once, and not while another continuation of it is in flight.
 * Refusals carry `error.details.error_code`: `thread_not_found` (404), `thread_already_continued`,
 * `thread_continue_in_flight`, `thread_fingerprint_mismatch` (another `model` than the thread's),
 * and a `thread` without the beta is an unknown field (400). Held in memory, per process.
 */

type Json = Record<string, unknown>;

/** The beta a request must name to use threads. */
export const THREADS_BETA = "message-threads-2026-08-12";

/** How long a thread lives after its last request. */
const EXPIRY_MS = 5 * 60 * 1000;

/** The most threads held at once (then all are dropped: the emulator is not a store). */
const MAX_HELD = 10_000;

/** A conversation held under an answer's id. */
interface Held {
  model: unknown;
  system: unknown;
  tools: unknown;
  /** The conversation so far, ending with the answer. */
  messages: unknown[];
  lastUsed: number;
  continued: boolean;
  inFlight: boolean;
}

const held = new Map<string, Held>();

/** A refusal, in Anthropic's error envelope (rendered by the caller). */
export interface ThreadRefusal {
  status: number;
  message: string;
  details?: Json;
}

/** A request's turn on a thread: the body the model sees, and what its answer does. */
export interface ThreadTurn {
  /** The request as the model sees it: a continuation with the whole conversation put in. */
  body: Json;
  /** The answer is being written (a continuation is in flight until it is answered or ends). */
  begin(): void;
  /** The answer, whole: the conversation is held under its id. */
  answered(message: Json): void;
  /** The answer ended without being whole (an idempotent no-op once answered). */
  ended(): void;
}

function names(headers: Headers): string[] {
  return (headers.get("anthropic-beta") ?? "").split(",").map((s) => s.trim());
}

function liveThread(id: string, now: number): Held | undefined {
  const thread = held.get(id);
  if (thread && now - thread.lastUsed > EXPIRY_MS && !thread.inFlight) {
    held.delete(id);
    return undefined;
  }
  return thread;
}

function hold(id: string, thread: Held): void {
  if (held.size >= MAX_HELD) held.clear();
  held.set(id, thread);
}

/**
 * The thread a request creates or continues: undefined when it names none, a refusal, or its
 * turn.
 */
export function threadTurn(headers: Headers, body: Json): ThreadRefusal | ThreadTurn | undefined {
  const thread = body.thread as Json | null | undefined;
  if (thread === undefined || thread === null) return undefined;
  if (!names(headers).includes(THREADS_BETA)) {
    return { status: 400, message: "thread: Extra inputs are not permitted" };
  }
  const { thread: _, ...request } = body;
  const messages = Array.isArray(body.messages) ? body.messages : [];
  if (thread.type === "create") {
    return {
      body: request,
      begin() {},
      answered(message) {
        hold(String(message.id), {
          model: body.model,
          system: body.system,
          tools: body.tools,
          messages: [...messages, { role: "assistant", content: message.content }],
          lastUsed: Date.now(),
          continued: false,
          inFlight: false,
        });
      },
      ended() {},
    };
  }
  if (thread.type !== "continue" || typeof thread.previous_message_id !== "string") {
    return {
      status: 400,
      message: 'thread: must be {"type": "create"} or {"type": "continue", "previous_message_id"}',
    };
  }
  for (const field of ["system", "tools"]) {
    if (body[field] !== undefined) {
      return {
        status: 400,
        message:
          `${field}: not allowed with thread.type "continue"; the thread keeps the ${field} of the request that created it`,
      };
    }
  }
  const id = thread.previous_message_id;
  const now = Date.now();
  const previous = liveThread(id, now);
  if (!previous) {
    return {
      status: 404,
      message: `thread.previous_message_id: no thread found for ${id}`,
      details: { error_code: "thread_not_found" },
    };
  }
  previous.lastUsed = now;
  if (previous.model !== body.model) {
    return {
      status: 400,
      message: "model: differs from the thread's; continue with the model that created it",
      details: { error_code: "thread_fingerprint_mismatch" },
    };
  }
  if (previous.continued) {
    return {
      status: 400,
      message: `thread.previous_message_id: ${id} has already been continued`,
      details: { error_code: "thread_already_continued" },
    };
  }
  if (previous.inFlight) {
    return {
      status: 400,
      message: `thread.previous_message_id: another request is continuing ${id}`,
      details: { error_code: "thread_continue_in_flight" },
    };
  }
  const whole = [...previous.messages, ...messages];
  let done = false;
  return {
    body: {
      ...request,
      ...(previous.system === undefined ? {} : { system: previous.system }),
      ...(previous.tools === undefined ? {} : { tools: previous.tools }),
      messages: whole,
    },
    begin() {
      previous.inFlight = true;
    },
    answered(message) {
      if (done) return;
      done = true;
      previous.inFlight = false;
      previous.continued = true;
      hold(String(message.id), {
        ...previous,
        messages: [...whole, { role: "assistant", content: message.content }],
        lastUsed: Date.now(),
        continued: false,
        inFlight: false,
      });
    },
    ended() {
      if (done) return;
      done = true;
      previous.inFlight = false;
    },
  };
}

/** `stream`, whose turn `ended()` when it closes, fails or is cancelled. */
export function untilEnded(
  stream: ReadableStream<Uint8Array>,
  turn: ThreadTurn,
): ReadableStream<Uint8Array> {
  const reader = stream.getReader();
  return new ReadableStream({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (!done) return controller.enqueue(value);
        turn.ended();
        controller.close();
      } catch (error) {
        turn.ended();
        controller.error(error);
      }
    },
    cancel(reason) {
      turn.ended();
      return reader.cancel(reason);
    },
  });
}
