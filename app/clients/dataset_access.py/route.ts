import { promises as fs } from "node:fs";
import path from "node:path";

/** The Python client, served from this server so a data team can fetch the one file it needs. */
export async function GET() {
  const source = await fs.readFile(path.join(process.cwd(), "clients/python/dataset_access.py"));
  return new Response(source, {
    headers: {
      "Content-Type": "text/x-python; charset=utf-8",
      "Content-Disposition": 'attachment; filename="dataset_access.py"',
      "Cache-Control": "public, max-age=300",
    },
  });
}
