import type { DestinationConfig } from "../config";
import type { ExportTarget } from "./target";

export type { ExportTarget, ExpectedObject, Present } from "./target";

/**
 * The store a destination names, ready to use (connections are opened on first use). A store's SDK loads only when
 * a destination of its type is opened: the Azure SDK alone costs a process 0.28 CPU-seconds to load, which the
 * operator CLI's commands that never export no longer pay (issue #38).
 */
export async function openTarget(destination: DestinationConfig): Promise<ExportTarget> {
  switch (destination.type) {
    case "s3":
      return new (await import("./s3")).S3Target(destination.config, destination.secrets);
    case "azure":
      return new (await import("./azure")).AzureTarget(destination.config, destination.secrets);
    case "sftp":
      return new (await import("./sftp")).SftpTarget(destination.config, destination.secrets);
  }
}
