/**
 * The operator's bearer token (`admin.token`, `SWITCHYARD_ADMIN_TOKEN`) for `/metrics` and the
 * admin API: compared in constant time (as hashes, so the length leaks nothing either), never
 * logged or echoed.
 */
import type { Config } from "../config/load.ts";
import { GatewayError } from "../http/errors.ts";
import { hashKey, timingSafeEqual } from "./keys.ts";

/** Throws 404 when no admin token is configured (the admin routes are off). */
export function requireAdminEnabled(config: Pick<Config, "adminToken">): void {
  if (config.adminToken === null) {
    throw new GatewayError(404, "Not enabled: set admin.token (or SWITCHYARD_ADMIN_TOKEN).");
  }
}

/** Throws 404 when no admin token is configured, 401 when the request does not carry it. */
export function requireAdmin(req: Request, config: Pick<Config, "adminToken">): void {
  requireAdminEnabled(config);
  const header = req.headers.get("authorization") ?? "";
  const given = /^Bearer\s+(\S+)$/i.exec(header)?.[1] ?? "";
  if (!given || !timingSafeEqual(hashKey(given), hashKey(config.adminToken!))) {
    throw new GatewayError(401, "This route needs the admin token (Authorization: Bearer …).", {
      code: "invalid_admin_token",
    });
  }
}
