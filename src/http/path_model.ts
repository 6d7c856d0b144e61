/** The model named in a route's path (`/v1beta/models/{model}…`, `/v1/models/{model}`). */
import { GatewayError } from "./errors.ts";

/** The model id in the route's path (`models/` prefix allowed), or a 400. */
export function pathModel(params: Record<string, string>): string {
  let id: string;
  try {
    id = decodeURIComponent(params.model ?? "");
  } catch {
    throw new GatewayError(400, "The model name in the path is not validly percent-encoded.", {
      param: "model",
    });
  }
  return id.replace(/^models\//, "");
}
