/**
 * What a serving thread holds for WebSocket clients that read slower than their answers arrive:
 * the queues of the clients' sockets (Deno's `bufferedAmount`) and the unread answers of turns
 * over an upstream's socket. Each is bounded per turn; the thread's total is bounded too
 * (`server.webSocketQueueBytes`), so that many slow clients together cannot hold more than it.
 *
 * Each holder has an entry: what it held when last looked at. An entry is set when its holder adds
 * bytes (a message sent, an event queued), and a holder whose queue shrinks unseen (a socket's
 * client reads) gives a way to look again, which `refresh` does for those that held something.
 * A queue only shrinks between looks, so the total is not less than what is held — but for what
 * a holder still holds once it lets its entry go (a socket the gateway closed, a minute after; see
 * `pipeline/responses_socket.ts`) — and it is what a thread reports
 * (`switchyard_websocket_queued_bytes`).
 */

/** One holder's entry in a tally. */
export interface HeldEntry {
  /** What the holder holds now, in bytes (0 once it holds nothing, or has ended). */
  set(bytes: number): void;
  /** What the entry says it holds. */
  readonly bytes: number;
}

/** How often `over` looks at every holder again, at most. */
const REFRESH_MS = 50;

/** Bytes held across holders (see the module's note). */
export class HeldBytes {
  #total = 0;
  /** The looks of the holders that held something when last looked at. */
  readonly #holding = new Set<() => void>();
  #refreshedAt = 0;
  /**
   * Past this many looks kept, all are looked at again (twice as many as held something at the
   * last refresh): a holder that ended holding something unseen is let go of then, so the looks
   * kept stay within twice those that hold something.
   */
  #refreshPast = 64;

  /** The sum of the entries. */
  get total(): number {
    return this.#total;
  }

  /**
   * A new holder's entry, holding nothing yet. `look`, when given, sets the entry to what the
   * holder holds now; `refresh` calls it while the entry is above 0.
   */
  entry(look?: () => void): HeldEntry {
    let mine = 0;
    const add = (delta: number) => this.#total += delta;
    const holding = this.#holding;
    const grown = () => {
      if (holding.size > this.#refreshPast) this.refresh();
    };
    return {
      set(bytes: number) {
        add(bytes - mine);
        mine = bytes;
        if (!look) return;
        if (bytes <= 0) return void holding.delete(look);
        holding.add(look);
        grown();
      },
      get bytes() {
        return mine;
      },
    };
  }

  /** Looks again at every holder that held something (see `entry`). */
  refresh(): void {
    this.#refreshedAt = Date.now();
    this.#refreshPast = Infinity; // no refresh within this one
    for (const look of this.#holding) look();
    this.#refreshPast = 2 * this.#holding.size + 64;
  }

  /**
   * Whether more than `budget` is held. When the tally says so, its holders are looked at again
   * first (at most every `REFRESH_MS`): some may hold less since.
   */
  over(budget: number): boolean {
    if (this.#total <= budget) return false;
    if (Date.now() - this.#refreshedAt >= REFRESH_MS) this.refresh();
    return this.#total > budget;
  }
}

/** This thread's tally of what its WebSocket clients have not read yet. */
export const heldForSockets: HeldBytes = new HeldBytes();
