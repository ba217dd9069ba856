/** Shortest accepted server secret: HMAC-SHA256 keys and next-auth's signing need 256 bits. */
export const MIN_SECRET_LENGTH = 32;

/**
 * The server secret that signs download links (and next-auth sessions): AUTH_SECRET, or
 * NEXTAUTH_SECRET (an empty one counts as unset). The launcher (`npm run dev`/`npm start`)
 * provides one persisted under .data/ when neither is set, which suits a single instance; several
 * instances must share AUTH_SECRET. The launcher refuses to start with a secret this refuses.
 */
export function appSecret(env: NodeJS.ProcessEnv = process.env): string {
  const name = env.AUTH_SECRET ? "AUTH_SECRET" : "NEXTAUTH_SECRET";
  const secret = env[name];
  if (!secret) {
    throw new Error(
      `AUTH_SECRET must be set to at least ${MIN_SECRET_LENGTH} characters (e.g. \`openssl rand -base64 32\`).`,
    );
  }
  if (secret.length < MIN_SECRET_LENGTH) {
    throw new Error(
      `${name} is too short (${secret.length} characters): it must be at least ${MIN_SECRET_LENGTH} characters ` +
        `(e.g. \`openssl rand -base64 32\`), or unset to use one generated into .data/auth-secret.`,
    );
  }
  return secret;
}
