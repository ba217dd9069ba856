import { z } from "zod";
import { migrateLocalFilesToS3, type MigrationProgress } from "../../lib/storage/migrate";
import { command, interruption, PartialFailure, type Command } from "./command";

/** Moving stored files between drivers. */

/** A progress line on a terminal, rewritten in place. */
function progressLine() {
  const gb = (bytes: number) => `${(bytes / 1e9).toFixed(2)} GB`;
  return {
    update: ({ done, total, bytesDone, bytesTotal }: MigrationProgress) =>
      process.stderr.write(`\r${done}/${total} files, ${gb(bytesDone)} of ${gb(bytesTotal)}   `),
    end: () => process.stderr.write("\n"),
  };
}

export const commands: Record<string, Command> = {
  "storage:migrate": command(
    z.object({
      to: z.literal("s3"),
      "dry-run": z.boolean().optional(),
      "keep-local": z.boolean().optional(),
    }),
    async (options) => {
      const progress = process.stderr.isTTY ? progressLine() : undefined;
      const report = await migrateLocalFilesToS3({
        dryRun: options["dry-run"],
        keepLocal: options["keep-local"],
        signal: interruption.signal,
        onProgress: progress?.update,
      });
      progress?.end();
      const planned = report.planned.map((file) => `  ${file.id}: ${file.from} -> ${file.to} (${file.size} bytes)`);
      const failed = report.failed.map((file) => `  ${file.id}: ${file.reason}`);
      const output = {
        json: {
          dry_run: report.dryRun,
          total: report.total,
          migrated: report.migrated,
          bytes: report.bytes,
          failed: report.failed,
          ...(report.dryRun ? { planned: report.planned } : {}),
        },
        text: report.dryRun
          ? `Would copy ${report.total} local files to S3:${planned.length ? `\n${planned.join("\n")}` : ""}`
          : `Copied and verified ${report.migrated} of ${report.total} local files (${report.bytes} bytes); ${report.failed.length} failed${failed.length ? `:\n${failed.join("\n")}` : ""}`,
      };
      if (report.failed.length > 0) throw new PartialFailure(output);
      return output;
    },
  ),
};
