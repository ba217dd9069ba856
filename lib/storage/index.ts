import path from "node:path";
import { DATA_DIR } from "../db/config";
import { AppError } from "../errors";
import { processSingleton } from "../singleton";
import { LocalDirectoryStorage } from "./local";
import type { FileStorage, StorageDriver } from "./objects";
import { isS3Location, S3Storage } from "./s3";

export * from "./objects";

export function storageDriver(env: Record<string, string | undefined> = process.env): StorageDriver {
  const driver = env.STORAGE_DRIVER || "local";
  if (driver !== "local" && driver !== "s3") {
    throw new AppError("storage_not_configured", `STORAGE_DRIVER must be local or s3, not "${driver}".`);
  }
  return driver;
}

/** The configured storage for new files: a local directory (default) or an S3 bucket. */
export function fileStorage(): FileStorage {
  return processSingleton("storage:upload", () => (storageDriver() === "s3" ? new S3Storage() : localStorage()));
}

/** The local directory (`STORAGE_DIR`, default `.data/files`), which serves every file stored locally. */
export function localStorage(): LocalDirectoryStorage {
  return processSingleton(
    "storage:local",
    () =>
      new LocalDirectoryStorage(
        path.resolve(/* turbopackIgnore: true */ process.env.STORAGE_DIR ?? path.join(DATA_DIR, "files")),
      ),
  );
}

/** Which driver holds the bytes at `location`. */
export function driverOf(location: string): StorageDriver {
  return isS3Location(location) ? "s3" : "local";
}
