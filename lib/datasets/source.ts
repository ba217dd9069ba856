import { createWriteStream } from "node:fs";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { driverOf, localStorage } from "../storage";
import { readS3Object } from "../storage/s3";

/**
 * Getting a stored file where DuckDB can read it: DuckDB reads local paths only here (its httpfs
 * extension is not available), so an object in S3 is first copied to the task's temporary
 * directory through the AWS SDK. The checks of its content run in the engine process (./checks.ts).
 */

/** A readable path for the object at `location`: the stored file itself, or a copy in `workDir` named `name`. */
export async function localCopy(location: string, workDir: string, name = "source"): Promise<string> {
  if (driverOf(location) === "local") return localStorage().pathOf(location);
  const copy = path.join(workDir, name);
  const { body } = await readS3Object(location);
  await pipeline(body, createWriteStream(copy, { mode: 0o600 }));
  return copy;
}
