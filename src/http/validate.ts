/** Request validation with valibot; the first issue becomes a 400 naming the field. */
import * as v from "valibot";
import { GatewayError } from "./errors.ts";
import { formatPath, issueKeys } from "../field_path.ts";

/** The largest token count a request may name (upstreams take 32-bit integers). */
export const MAX_TOKEN_COUNT = 2_147_483_647;

/** A token count field: an integer from `min` to `MAX_TOKEN_COUNT`. */
export function tokenCount(min: number, max = MAX_TOKEN_COUNT) {
  return v.pipe(
    v.number("must be an integer"),
    v.integer("must be an integer"),
    v.minValue(min, `must be at least ${min}`),
    v.maxValue(max, `must be at most ${max}`),
  );
}

/** Parses `value` with `schema` or throws a 400 whose message and `param` name the field. */
export function validate<S extends v.GenericSchema>(schema: S, value: unknown): v.InferOutput<S> {
  const result = v.safeParse(schema, value, { abortEarly: true });
  if (result.success) return result.output;
  const issue = result.issues[0];
  const param = formatPath(issueKeys(issue));
  const message = issue.kind === "schema" && issue.received === "undefined" && param
    ? "is required"
    : issue.message;
  throw new GatewayError(400, param ? `Invalid '${param}': ${message}` : message, {
    param: param || undefined,
    code: param && message === "is required" ? "missing_required_parameter" : "invalid_value",
  });
}
