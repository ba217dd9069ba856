import type { DestinationConfig } from "../config";
import { AzureTarget } from "./azure";
import { S3Target } from "./s3";
import { SftpTarget } from "./sftp";
import type { ExportTarget } from "./target";

export type { ExportTarget, ExpectedObject, Present } from "./target";

/** The store a destination names, ready to use (connections are opened on first use). */
export function openTarget(destination: DestinationConfig): ExportTarget {
  switch (destination.type) {
    case "s3":
      return new S3Target(destination.config, destination.secrets);
    case "azure":
      return new AzureTarget(destination.config, destination.secrets);
    case "sftp":
      return new SftpTarget(destination.config, destination.secrets);
  }
}
