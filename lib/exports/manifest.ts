import { createHash } from "node:crypto";
import type { Prisma } from "../db/client";
import type { ExportFile } from "./files";
import type { Leased } from "./outcomes";
import type { ExportTarget } from "./targets";
import { stallTimeoutMs } from "./targets/target";

/** A run's `_manifest.json`: what it exported, written last, beside its files. */

export const MANIFEST_NAME = "_manifest.json";

/** A file of the run with its key in the store. */
export type PlannedFile = ExportFile & { key: string };

/** What the run exported: every file's key in the store, size, sha256 and table version. */
export function manifestOf(
  run: Leased,
  order: { id: string; name: string },
  planned: PlannedFile[],
  copied: { skipped: boolean }[],
  target: ExportTarget,
): Prisma.InputJsonObject {
  const tables = new Map<string, number>();
  for (const file of planned) if (file.table) tables.set(file.table.name, file.table.version);
  return {
    run_id: run.id,
    trigger: run.trigger,
    order_id: order.id,
    order_name: order.name,
    created_at: run.createdAt.toISOString(),
    tables: [...tables].map(([name, version]) => ({ name, version })),
    files: planned.map((file, index) => ({
      key: target.fullKey(file.key),
      file_id: file.fileId,
      name: file.name,
      size: file.size,
      sha256: file.sha256,
      content_type: file.contentType,
      format: file.format,
      table: file.table ?? null,
      already_there: copied[index]!.skipped,
    })),
  };
}

/** `_manifest.json` in `folder` (the one the run's files share), written after every file is in place. Returns its key in the store. */
export async function writeManifest(
  target: ExportTarget,
  destinationId: string,
  folder: string,
  manifest: Prisma.InputJsonObject,
): Promise<string> {
  const key = folder ? `${folder}/${MANIFEST_NAME}` : MANIFEST_NAME;
  const bytes = Buffer.from(`${JSON.stringify({ destination_id: destinationId, ...manifest }, null, 2)}\n`);
  const sha256 = createHash("sha256").update(bytes).digest("hex");
  const expected = { size: bytes.length, sha256, contentType: "application/json" };
  await target.put(key, bytes, expected, AbortSignal.timeout(stallTimeoutMs()));
  return target.fullKey(key);
}
