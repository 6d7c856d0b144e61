/**
 * Prompt-cache breakpoints of a Messages request (pure; `anthropic-messages.md` §2–3). Anthropic
 * caches a prompt only up to a block carrying `cache_control` (`{"type": "ephemeral", "ttl"?:
 * "5m" | "1h"}`), reading the prompt in one order — the tools, the system prompt, then the
 * messages' blocks — and takes at most four breakpoints a request (a top-level `cache_control`
 * counts as one, on the last block), none of them living longer than one before it.
 *
 * A client's breakpoints are read into the canonical form (`CacheMark`) and written back where
 * they were. A client whose protocol caches by itself (Responses, chat, generateContent) sets
 * none, so the gateway places them (`withBreakpoints`) at the prefix that stays the same from one
 * call of a conversation to the next: the end of the previous turn (the last message before the
 * final user turn: the history the next call repeats), the system prompt and the tools — in that
 * order of what each covers, as many as the limit leaves.
 */
import { invalid, isObject, object } from "../../http/json.ts";
import type { CacheMark, Json } from "../../translate/ir.ts";

/** The most breakpoints Anthropic takes in one request. */
export const MAX_BREAKPOINTS = 4;

type Ttl = "5m" | "1h";

/** A block's `cache_control` as canonical (absent: none; a malformed one is a 400). */
export function readMark(value: unknown, field: string): CacheMark | undefined {
  if (value === undefined || value === null) return undefined;
  const control = object(value, field);
  if (control.type !== "ephemeral") throw invalid(`${field}.type`, "must be ephemeral");
  const ttl = control.ttl;
  if (ttl === undefined || ttl === null) return {};
  if (ttl !== "5m" && ttl !== "1h") throw invalid(`${field}.ttl`, "must be 5m or 1h");
  return { ttl };
}

/** A breakpoint as Messages writes it. */
export function cacheControl(mark: CacheMark): Json {
  return { type: "ephemeral", ...(mark.ttl ? { ttl: mark.ttl } : {}) };
}

/** `block` with the breakpoint `mark`, when there is one. */
export function marked(block: Json, mark: CacheMark | undefined): Json {
  return mark ? { ...block, cache_control: cacheControl(mark) } : block;
}

/** The lifetime of a `cache_control` value (none: no breakpoint). */
function ttlOf(control: unknown): Ttl | undefined {
  if (!isObject(control)) return undefined;
  return control.ttl === "1h" ? "1h" : "5m";
}

/** Blocks no breakpoint may be set on. */
const UNMARKABLE = new Set(["thinking", "redacted_thinking"]);

/** A place a breakpoint can be set, in the order Anthropic reads the prompt. */
interface Slot {
  /** The lifetime of the breakpoint already there. */
  ttl?: Ttl;
  set(control: Json): void;
}

/**
 * The places of `body` (a copy the caller owns: blocks are copied as they are marked), with the
 * slots that end the tools and the system prompt, and after each message the last slot so far
 * (`ends`; before the first, `ends[-1]`: the last slot before the messages).
 */
function slotsOf(
  body: Json,
): { slots: Slot[]; tools?: number; system?: number; ends: Map<number, number> } {
  const slots: Slot[] = [];
  const blockSlot = (blocks: unknown[], i: number): void => {
    const block = blocks[i];
    if (!isObject(block) || UNMARKABLE.has(String(block.type))) return;
    slots.push({
      ttl: ttlOf(block.cache_control),
      set: (control) => blocks[i] = { ...block, cache_control: control },
    });
  };
  /** Blocks of `content` (a string is one text block), set back through `replace`. */
  const blocksOf = (content: unknown, replace: (blocks: unknown[]) => void): void => {
    if (typeof content === "string") {
      if (!content) return;
      slots.push({
        set: (control) => replace([{ type: "text", text: content, cache_control: control }]),
      });
    } else if (Array.isArray(content)) {
      const blocks = [...content];
      replace(blocks);
      blocks.forEach((_, i) => blockSlot(blocks, i));
    }
  };
  let tools: number | undefined;
  if (Array.isArray(body.tools)) {
    const copy = [...body.tools];
    body.tools = copy;
    copy.forEach((_, i) => blockSlot(copy, i));
    if (slots.length) tools = slots.length - 1;
  }
  const before = slots.length;
  blocksOf(body.system, (blocks) => body.system = blocks);
  const system = slots.length > before ? slots.length - 1 : undefined;
  const ends = new Map([[-1, slots.length - 1]]);
  if (Array.isArray(body.messages)) {
    const messages = [...body.messages];
    body.messages = messages;
    messages.forEach((raw, i) => {
      const message = isObject(raw) ? { ...raw } : {};
      if (isObject(raw)) messages[i] = message;
      blocksOf(message.content, (blocks) => message.content = blocks);
      ends.set(i, slots.length - 1);
    });
  }
  return { slots, tools, system, ends };
}

/** Whether a breakpoint of `ttl` at `at` keeps every longer-lived one before every shorter one. */
function inOrder(slots: Slot[], at: number, ttl: Ttl, whole: Ttl | undefined): boolean {
  const longer = (a: Ttl, b: Ttl) => a === "1h" && b === "5m";
  return slots.every((slot, i) =>
    !slot.ttl || (i < at ? !longer(ttl, slot.ttl) : i > at ? !longer(slot.ttl, ttl) : true)
  ) && !(whole && longer(whole, ttl));
}

/**
 * `body` (a Messages request) with the gateway's breakpoints, each of `ttl` (absent: 5 minutes):
 * at the end of the previous turn, of the system prompt and of the tools (see the module), none
 * where one already is, one that would put a longer lifetime after a shorter one placed with the
 * default lifetime instead (or not at all), and no more than the four Anthropic takes counting
 * the client's own.
 */
export function withBreakpoints(body: Json, ttl?: CacheMark["ttl"]): Json {
  const out = { ...body };
  const { slots, tools, system, ends } = slotsOf(out);
  const whole = ttlOf(body.cache_control);
  let free = MAX_BREAKPOINTS - slots.filter((s) => s.ttl).length - (whole ? 1 : 0);
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const finalUser = messages.findLastIndex((m) => isObject(m) && m.role === "user");
  // The previous turn's last block that takes a breakpoint (none in a turn of thinking alone).
  const end = ends.get(finalUser - 1)!;
  const previous = finalUser > 0 && end > ends.get(finalUser - 2)! ? end : undefined;
  for (const at of [previous, system, tools]) {
    if (at === undefined || free <= 0 || slots[at].ttl) continue;
    const wanted: Ttl = ttl ?? "5m";
    const placed = [wanted, "5m" as const].find((t) => inOrder(slots, at, t, whole));
    if (!placed) continue;
    slots[at].set(cacheControl(placed === "1h" ? { ttl: "1h" } : {}));
    slots[at].ttl = placed;
    free--;
  }
  return out;
}
