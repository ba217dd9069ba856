import { TYPESCRIPT_CLIENT_FILE, typescriptClientPackage } from "@/lib/clients/typescript-package";

/** The tarball's SHA-256 in `sha256sum`'s format, so `sha256sum -c` checks a downloaded copy. */
export async function GET() {
  const { sha256 } = await typescriptClientPackage();
  return new Response(`${sha256}  ${TYPESCRIPT_CLIENT_FILE}\n`, {
    headers: { "Content-Type": "text/plain; charset=utf-8", "Cache-Control": "public, max-age=300" },
  });
}
