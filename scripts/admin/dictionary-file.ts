import { promises as fs } from "node:fs";
import { parse as parseYaml } from "yaml";
import { AppError } from "../../lib/errors";

/** A `table:describe --file`: JSON for `.json`, else YAML (of which JSON is a subset), parsed, not yet checked. */
export async function readDictionaryFile(filePath: string): Promise<unknown> {
  const content = await fs.readFile(filePath, "utf8").catch(() => {
    throw new AppError("source_file_unreadable", `No readable file at ${filePath}.`);
  });
  try {
    return filePath.toLowerCase().endsWith(".json") ? JSON.parse(content) : parseYaml(content);
  } catch (error) {
    const kind = filePath.toLowerCase().endsWith(".json") ? "JSON" : "YAML";
    throw new AppError(
      "invalid_argument",
      `${filePath} is not valid ${kind}: ${(error as Error).message.split("\n")[0]}`,
    );
  }
}
