import { expect } from "vitest";

/**
 * Asserts an RFC 9457 problem response of the contract: the status, problem+json, exactly the
 * contract's fields with this `code`, the request id of the X-Request-Id header, a `type` pointing
 * at the code's documentation, and a detail without internals (SQL, stack frames).
 */
export async function expectProblem(
  response: Response,
  status: number,
  code: string,
  detail?: RegExp,
): Promise<{ detail: string; request_id: string }> {
  expect(response.status).toBe(status);
  expect(response.headers.get("content-type")).toBe("application/problem+json");
  const body = (await response.json()) as Record<string, unknown>;
  expect(Object.keys(body).sort()).toEqual(["code", "detail", "request_id", "status", "title", "type"]);
  expect(body).toMatchObject({ status, code, request_id: response.headers.get("x-request-id") });
  expect(body.type).toMatch(new RegExp(`/docs/api#error-${code}$`));
  expect(body.title).toEqual(expect.any(String));
  expect(body.detail).not.toMatch(/prisma|SELECT |INSERT |\bat .*\.(ts|js):\d+/i);
  if (detail) expect(body.detail).toMatch(detail);
  return body as { detail: string; request_id: string };
}
