import { randomUUID } from "node:crypto";

const VALID_REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** A valid incoming X-Request-Id is echoed, so callers can correlate; otherwise a new one. */
export function requestIdFrom(incoming: string | string[] | null | undefined): string {
  return typeof incoming === "string" && VALID_REQUEST_ID.test(incoming) ? incoming : randomUUID();
}
