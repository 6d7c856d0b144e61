/**
 * The 400 for what a protocol cannot express (pure): a translated request never loses a field
 * silently; what the other side has no slot for is refused by the client's own name for it.
 */
import { GatewayError } from "../http/errors.ts";

/** A 400 for something the target protocol cannot express (never silently dropped). */
export function inexpressible(field: string, what: string, target: string): GatewayError {
  return new GatewayError(
    400,
    `Invalid '${field}': ${what} cannot be translated for this model, whose provider speaks ${target}; remove it or choose a model that supports it.`,
    { param: field, code: "unsupported_parameter" },
  );
}
