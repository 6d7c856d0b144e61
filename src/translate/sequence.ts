/**
 * One block open at a time (pure): for client protocols whose blocks or items may not interleave
 * (Messages blocks, Responses items), canonical blocks that arrive while another is open —
 * parallel tool calls whose arguments interleave — are held and written in their turn, in the
 * order they started. A text block with no text is never opened. `sequencedContent` routes an
 * encoder's content events through one.
 */
import type { ContentEvent } from "./stream_encoder.ts";
import type { HostedCallPart, Opaque } from "./ir.ts";

/** A block as the sequencer holds it. */
export interface Block<T> {
  id: string;
  kind: "text" | "reasoning" | "tool";
  /** What the encoder keeps of the block (its name, its opaque state…). */
  data: T;
  deltas: string[];
  ended: boolean;
}

/** What a client encoder does with a block when its turn comes. */
export interface BlockWriter<T> {
  begin(block: Block<T>): void;
  delta(block: Block<T>, text: string): void;
  end(block: Block<T>): void;
}

/** Blocks written one at a time, in the order they started. */
export interface Sequencer<T> {
  add(id: string, kind: Block<T>["kind"], data: T): void;
  push(id: string, text: string): void;
  /** Ends a block; `update` changes its data first (e.g. opaque state known at its end). */
  end(id: string, update?: (data: T) => T): void;
  /** Ends every block, in order (before the answer's end). */
  closeAll(): void;
}

/** A sequencer writing through `writer`. */
export function sequencer<T>(writer: BlockWriter<T>): Sequencer<T> {
  let open: Block<T> | null = null;
  const waiting: Block<T>[] = [];
  const byId = new Map<string, Block<T>>();

  const advance = () => {
    while (!open && waiting.length) {
      const next = waiting.shift()!;
      if (next.kind === "text" && !next.deltas.length) {
        if (next.ended) {
          byId.delete(next.id);
          continue;
        }
        waiting.unshift(next);
        return;
      }
      open = next;
      writer.begin(next);
      for (const d of next.deltas) writer.delta(next, d);
      next.deltas = [];
      if (next.ended) {
        writer.end(next);
        byId.delete(next.id);
        open = null;
      }
    }
  };

  const end = (id: string, update?: (data: T) => T) => {
    const block = byId.get(id);
    if (!block) return;
    block.ended = true;
    if (update) block.data = update(block.data);
    if (block === open) {
      writer.end(block);
      byId.delete(id);
      open = null;
    }
    advance();
  };

  return {
    add(id, kind, data) {
      const block: Block<T> = { id, kind, data, deltas: [], ended: false };
      byId.set(id, block);
      waiting.push(block);
      advance();
    },
    push(id, text) {
      const block = byId.get(id);
      if (!block || !text) return;
      if (block === open) writer.delta(block, text);
      else {
        block.deltas.push(text);
        advance();
      }
    },
    end,
    closeAll() {
      for (const block of [...byId.values()]) end(block.id);
    },
  };
}

/** What an encoder of sequenced blocks keeps and writes besides the blocks themselves. */
export interface SequencedBlocks<T> {
  /** What it keeps of a block that starts (a call's name, its opaque state…). */
  data(event: Extract<ContentEvent, { type: `${string}-start` }>): T;
  /** A reasoning block's data once its opaque state is known, at its end. */
  ended(data: T, opaque: Opaque): T;
  /** Writes a hosted call, between blocks (every block before it is closed first). */
  hosted(part: HostedCallPart): void;
}

/**
 * An encoder's content events routed through a sequencer writing with `writer`: a block opens
 * the stream when it starts; `closeAll` ends every block (before the answer's end).
 */
export function sequencedContent<T>(
  writer: BlockWriter<T>,
  blocks: SequencedBlocks<T>,
): { content(event: ContentEvent, open: () => void): void; closeAll(): void } {
  const sequence = sequencer(writer);
  return {
    content(event, open) {
      switch (event.type) {
        case "text-start":
          open();
          return sequence.add(event.id, "text", blocks.data(event));
        case "reasoning-start":
          open();
          return sequence.add(event.id, "reasoning", blocks.data(event));
        case "tool-input-start":
          open();
          return sequence.add(event.id, "tool", blocks.data(event));
        case "text-delta":
        case "reasoning-delta":
        case "tool-input-delta":
          return sequence.push(event.id, event.delta);
        case "text-end":
        case "tool-input-end":
          return sequence.end(event.id);
        case "reasoning-end": {
          const opaque = event.opaque;
          return sequence.end(event.id, (data) => opaque ? blocks.ended(data, opaque) : data);
        }
        case "hosted-call":
          open();
          sequence.closeAll();
          return blocks.hosted(event.part);
      }
    },
    closeAll: () => sequence.closeAll(),
  };
}
