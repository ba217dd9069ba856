/**
 * The server secret that signs download links (and next-auth sessions): AUTH_SECRET, or
 * NEXTAUTH_SECRET. The launcher (`npm run dev`/`npm start`) provides one persisted under .data/
 * when neither is set, which suits a single instance; several instances must share AUTH_SECRET.
 */
export function appSecret(): string {
  const secret = process.env.AUTH_SECRET ?? process.env.NEXTAUTH_SECRET;
  if (!secret || secret.length < 32) {
    throw new Error("AUTH_SECRET must be set to at least 32 characters (e.g. `openssl rand -base64 32`).");
  }
  return secret;
}
