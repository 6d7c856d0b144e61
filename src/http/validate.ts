/** Request validation with valibot; the first issue becomes a 400 naming the field. */
import * as v from "valibot";
import { GatewayError } from "./errors.ts";
import { formatPath, issueKeys } from "../field_path.ts";

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
