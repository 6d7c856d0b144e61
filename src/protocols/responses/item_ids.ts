/**
 * The ids of a translated answer's output items (pure): the item's kind (`msg`, `rs`, `fc`…),
 * then the answer's own id and the item's place in its output, so that an id names where it was
 * issued and the item can be found again from the answer the gateway keeps (an `item_reference`,
 * see `references.ts`). An answer id of another form (none the gateway issues) gives ids derived
 * from it by a hash, which name nothing.
 */
import { shortHash } from "../../translate/tool_ids.ts";

/** The answer ids the gateway issues (`answers.id()`): `resp_` and 48 hex digits. */
const ANSWER = /^resp_([0-9a-f]{48})$/;
/** An item id issued in such an answer: kind, the answer's digits, the place (4 hex digits). */
const ISSUED = /^[a-z]+_([0-9a-f]{48})([0-9a-f]{4})$/;

/** The id of the output item at `index` of answer `answerId`, of kind `prefix` (stable). */
export function itemId(prefix: string, answerId: string, index: number): string {
  const answer = ANSWER.exec(answerId)?.[1];
  if (!answer || index > 0xffff) {
    return `${prefix}_${shortHash(`${answerId}#${index}`)}${shortHash(`${index}#${answerId}`)}`;
  }
  return `${prefix}_${answer}${index.toString(16).padStart(4, "0")}`;
}

/** The answer an item id was issued in and the item's place; undefined for any other id. */
export function issuedIn(id: string): { answerId: string; index: number } | undefined {
  const match = ISSUED.exec(id);
  return match ? { answerId: `resp_${match[1]}`, index: parseInt(match[2], 16) } : undefined;
}
