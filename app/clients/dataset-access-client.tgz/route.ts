import { TYPESCRIPT_CLIENT_FILE, typescriptClientPackage } from "@/lib/clients/typescript-package";

/** The TypeScript client as an npm tarball: `npm install <site>/clients/dataset-access-client.tgz`. */
export async function GET() {
  const { bytes, sha256 } = await typescriptClientPackage();
  return new Response(new Uint8Array(bytes), {
    headers: {
      "Content-Type": "application/gzip",
      "Content-Disposition": `attachment; filename="${TYPESCRIPT_CLIENT_FILE}"`,
      "Cache-Control": "public, max-age=300",
      // The digest beside it, at /clients/dataset-access-client.tgz.sha256, for those who check first.
      "X-Checksum-Sha256": sha256,
    },
  });
}
