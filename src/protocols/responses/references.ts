/**
 * Item references (`{"type": "item_reference", "id": …}`) to items the gateway itself issued
 * (pure). A translated answer's item id names the answer and the item's place in it
 * (`item_ids.ts`); the answer's content, which the gateway keeps for the caller (`RouteInfo.kept`),
 * is laid out again exactly as it was written (`outputItems`), and the item found there is read
 * as if the client had sent it whole — reasoning with its opaque state, calls with their ids.
 * Any other id — another account's, one never issued, expired, of an answer stored with
 * `store: false`, or an upstream's — is a 400 that says nothing of whose it is (an upstream's item
 * of the caller's own stored answer is sent on as it is, on a call passed through: `state.ts`).
 */
import { GatewayError } from "../../http/errors.ts";
import { textOf } from "../../http/json.ts";
import type { RouteInfo } from "../../translate/codec.ts";
import type { Json } from "../../translate/ir.ts";
import { toToken } from "../../translate/opaque.ts";
import type { ToolForms } from "../../translate/tool_forms.ts";
import { outputItems } from "./encode_response.ts";
import { issuedIn } from "./item_ids.ts";

/** The 400 for an item reference that names no item the gateway keeps for the caller. */
export function unknownItem(field: string, id: unknown): GatewayError {
  const text = textOf(id);
  const shown = text.length > 64 ? `${text.slice(0, 64)}…` : text;
  return new GatewayError(
    400,
    `Invalid '${field}': no item with id '${shown}' is kept for you on this gateway. An item reference can name only an item of one of your answers made through this gateway without \`store: false\` (a translated answer's within the conversations' retention); send the item itself.`,
    { param: field, code: "invalid_value" },
  );
}

/** The kinds of items whose ids keep their prefix; any other prefix is a call's. */
const KINDS = new Set(["msg", "rs", "ws"]);

/**
 * An item id without what the request's tools decide: a call's prefix (`fc`, `ctc`, `tsc`…
 * follow how the client declares the tool, which it may have changed since).
 */
function sameItem(issued: string, named: string): boolean {
  const kind = (id: string) => {
    const prefix = id.slice(0, id.indexOf("_"));
    return KINDS.has(prefix) ? prefix : "call";
  };
  const place = (id: string) => id.slice(id.indexOf("_") + 1);
  return kind(issued) === kind(named) && place(issued) === place(named);
}

/** Reads item references: the item one names (at `field`), or a 400 when it names none. */
export type References = (reference: Json, field: string) => Json;

/**
 * The references of one request: each reads the item as the gateway issued it, written again
 * from the kept answer (each answer once), its calls in the forms the request's tools (`forms`)
 * give them.
 */
export function references(route: RouteInfo, forms: () => ToolForms): References {
  const answers = new Map<string, Json[] | undefined>();
  const itemsOf = (answerId: string): Json[] | undefined => {
    if (!answers.has(answerId)) {
      const content = route.kept?.(answerId);
      const info = { ...forms(), id: answerId, model: "", created: 0, token: toToken };
      answers.set(answerId, content && outputItems(content, info));
    }
    return answers.get(answerId);
  };
  return (reference, field) => {
    const id = typeof reference.id === "string" ? reference.id : "";
    const issued = issuedIn(id);
    const item = issued ? itemsOf(issued.answerId)?.[issued.index] : undefined;
    if (!item || !sameItem(String(item.id), id)) throw unknownItem(field, reference.id);
    return item;
  };
}
