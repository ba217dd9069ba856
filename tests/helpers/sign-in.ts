import type { TestServer } from "./server";

/**
 * next-auth's sign-in request, as its client sends it: CSRF token from /api/auth/csrf, double-submitted.
 * `ip` is the client address as a trusted proxy reports it (servers started with TRUST_PROXY=true).
 */
export async function requestSignIn(
  server: TestServer,
  email: string,
  { action = "signin/email", ip, csrf = true }: { action?: string; ip?: string; csrf?: boolean } = {},
) {
  const csrfResponse = await fetch(`${server.url}/api/auth/csrf`);
  const { csrfToken } = (await csrfResponse.json()) as { csrfToken: string };
  const cookie = csrfResponse.headers
    .getSetCookie()
    .map((header) => header.split(";")[0])
    .join("; ");
  const response = await fetch(`${server.url}/api/auth/${action}`, {
    method: "POST",
    headers: {
      "Content-Type": "application/x-www-form-urlencoded",
      ...(csrf ? { Cookie: cookie } : {}),
      ...(ip ? { "X-Forwarded-For": ip } : {}),
    },
    body: new URLSearchParams({ email, csrfToken: csrf ? csrfToken : "", callbackUrl: "/orders", json: "true" }),
    redirect: "manual",
  });
  const url = new URL(((await response.json()) as { url: string }).url);
  return { status: response.status, url, error: url.searchParams.get("error"), headers: response.headers };
}
