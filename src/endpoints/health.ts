/** `GET /healthz`: liveness, without authentication. */
import type { Handler } from "../context.ts";
import { jsonResponse } from "../http/json.ts";

export const getHealth: Handler = () => jsonResponse({ status: "ok" });
