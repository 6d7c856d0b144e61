/**
 * What is in flight on a serving thread (the deadlines in force, the streams open), kept as a
 * doubly linked list instead of a `Set`.
 *
 * A `Set` or `Map` that gains and loses an entry with every request rebuilds its table again and
 * again, and V8 links each table it leaves behind to the one that replaced it. Once a full
 * collection has moved such a table to the old generation, it keeps every younger table after it
 * alive through every scavenge until the next full collection, and with them each entry and all
 * it holds. With the deadlines in a `Set`, about a tenth of what a chat request allocated was
 * promoted that way (see `docs/benchmark.md`). A node taken out of this list has both its links
 * cleared, so a dead one holds nothing newer than itself.
 */

/** One value in a `LiveList`. */
export interface LiveEntry {
  /** Takes the value out of its list; true when it was still in it. */
  remove(): boolean;
}

class Node<T> implements LiveEntry {
  prev: Node<T> | null = null;
  next: Node<T> | null = null;
  #list: LiveList<T> | null;

  constructor(list: LiveList<T>, readonly value: T) {
    this.#list = list;
  }

  remove(): boolean {
    const list = this.#list;
    if (!list) return false;
    this.#list = null;
    list.unlink(this);
    return true;
  }
}

/** Values in flight, oldest first: added and removed in constant time, without a table. */
export class LiveList<T> {
  #first: Node<T> | null = null;
  #last: Node<T> | null = null;
  #size = 0;

  /** How many values are in the list. */
  get size(): number {
    return this.#size;
  }

  /** Adds `value` at the end; the entry takes it out again. */
  add(value: T): LiveEntry {
    const node = new Node(this, value);
    node.prev = this.#last;
    if (this.#last) this.#last.next = node;
    else this.#first = node;
    this.#last = node;
    this.#size++;
    return node;
  }

  /** The values in the list now, oldest first (a copy: the caller may remove entries meanwhile). */
  values(): T[] {
    const values: T[] = [];
    for (let node = this.#first; node; node = node.next) values.push(node.value);
    return values;
  }

  /** The entries in the list now, oldest first, with their values (a copy, as `values`). */
  entries(): [LiveEntry, T][] {
    const entries: [LiveEntry, T][] = [];
    for (let node = this.#first; node; node = node.next) entries.push([node, node.value]);
    return entries;
  }

  /** Unlinks `node` (called once, by `Node.remove`). */
  unlink(node: Node<T>): void {
    if (node.prev) node.prev.next = node.next;
    else this.#first = node.next;
    if (node.next) node.next.prev = node.prev;
    else this.#last = node.prev;
    node.prev = node.next = null;
    this.#size--;
  }
}
