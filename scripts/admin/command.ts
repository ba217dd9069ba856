import { createReadStream, promises as fs } from "node:fs";
import { z } from "zod";
import { AppError } from "../../lib/errors";

/** What a command prints: one JSON object with --json, else a summary for a person. */
export type Output = { json: Record<string, unknown>; text: string };
/** A command's options (one zod object; its shape tells the parser which are flags and which repeat) and its work. */
export type Command = { options: z.ZodObject; run: (options: never) => Promise<Output>; groups?: OptionGroups };

/**
 * Options that belong to the option before them (`--column price --description T --unit EUR`): after
 * each `--by NAME`, the `members` given go to that group (`{name, ...members}`, an array under `by`);
 * before the first, only `leading` members may appear, for the command itself.
 */
export type OptionGroups = { by: string; members: readonly string[]; leading: readonly string[] };

export const text = z.string().trim().min(1);
export const wholeNumber = z.coerce.number().int();
export const bool = z.enum(["true", "false"]).transform((value) => value === "true");

export function command<S extends z.ZodObject>(
  options: S,
  run: (options: z.infer<S>) => Promise<Output>,
  groups?: OptionGroups,
): Command {
  return { options, run: run as (options: never) => Promise<Output>, groups };
}

/** Aborted when the operator interrupts the command (SIGINT, SIGTERM). */
export const interruption = new AbortController();

/** Some work succeeded, some input was refused: report both and exit non-zero. */
export class PartialFailure extends Error {
  constructor(
    readonly output: Output,
    message = "some input was refused",
  ) {
    super(message);
  }
}

/** A part read from a path: opened when stored, and again to compare with what an earlier, killed run stored. */
export const readableFile = (filePath: string) => ({ path: filePath, open: () => createReadStream(filePath) });

export async function assertReadableFile(filePath: string): Promise<void> {
  const stat = await fs.stat(filePath).catch(() => null);
  if (!stat) throw new AppError("source_file_unreadable", `No file at ${filePath}.`);
  // A named pipe is fine too (e.g. `--path <(curl ...)`): it is read as a stream like any file.
  if (!stat.isFile() && !stat.isFIFO())
    throw new AppError("source_file_unreadable", `${filePath} is not a regular file.`);
  await fs.access(filePath, fs.constants.R_OK).catch(() => {
    throw new AppError("source_file_unreadable", `${filePath} cannot be read (permissions).`);
  });
}
