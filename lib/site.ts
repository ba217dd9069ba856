/**
 * This site's origins, in one place. Absolute links (signed downloads, the OpenAPI `servers`,
 * problem types, share links, e-mails) are built from here.
 */

/** APP_URL without trailing slashes, or "" when it is not set. */
export function configuredOrigin(): string {
  return (process.env.APP_URL ?? "").replace(/\/+$/, "");
}

/** Whether a reverse proxy in front of the app is trusted to say who the client is and which host it asked for. */
export function trustsProxy(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.TRUST_PROXY === "true";
}

/**
 * The public origin for absolute links: APP_URL (set it in production), else the host the
 * client addressed. X-Forwarded-Host/-Proto count only behind a trusted proxy (TRUST_PROXY=true):
 * otherwise any client could choose the host our links point to. Not request.url: under
 * `next start` its host is the server's own name.
 */
export function publicOrigin(request: { headers: Headers; url: string }): string {
  const configured = configuredOrigin();
  if (configured) return configured;
  const url = new URL(request.url);
  const forwarded = (name: string) => (trustsProxy() ? request.headers.get(name)?.split(",")[0]?.trim() : undefined);
  const host = forwarded("x-forwarded-host") || request.headers.get("host") || url.host;
  const protocol = forwarded("x-forwarded-proto") || url.protocol.replace(/:$/, "");
  return `${protocol}://${host}`;
}

/** The origin of e-mailed links (sign-in, key reminders): NEXTAUTH_URL (the launcher sets it from APP_URL or the local port). */
export function authBaseUrl(): string {
  return (process.env.NEXTAUTH_URL ?? "http://localhost:3000").replace(/\/+$/, "");
}

/** This site's public origin in server components and server actions. */
export async function siteOrigin(): Promise<string> {
  // Loaded here, not at the top: the launcher and the CLI use this module outside Next.js.
  const { headers } = await import("next/headers");
  return publicOrigin({ headers: await headers(), url: "http://localhost/" });
}
