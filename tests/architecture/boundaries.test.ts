import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

/**
 * The layers, as imports show them (docs/development.md, "Layout"):
 * - lib/ domain folders (orders, tables, exports, keys, ...) know nothing of HTTP surfaces: they
 *   never import lib/api. They answer with values and AppErrors; the surfaces make responses.
 * - The HTTP surfaces are lib/api (/api/v1), lib/http (what every surface shares, download links),
 *   lib/sharing (Delta Sharing) and lib/docs (the API reference, made from the OpenAPI document).
 * - app/ pages and routes call lib/ functions and never the database client (lib/db): every read
 *   goes through a function that holds the tenant boundary.
 */
const SURFACES = new Set(["api", "http", "sharing", "docs"]);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) return sourceFiles(file);
    return /\.tsx?$/.test(name) ? [file] : [];
  });
}

/** The project paths a file imports (`@/x` and relative imports), relative to the project root. */
function projectImports(file: string): string[] {
  return ts.preProcessFile(readFileSync(file, "utf8"), true, true).importedFiles.flatMap(({ fileName }) => {
    if (fileName.startsWith("@/")) return [fileName.slice(2)];
    if (fileName.startsWith(".")) return [path.relative(".", path.resolve(path.dirname(file), fileName))];
    return [];
  });
}

const inFolder = (target: string, folder: string) => target === folder || target.startsWith(`${folder}/`);

/** Every import of `files` into `forbidden`, as "file -> import". */
function violations(files: string[], forbidden: string): string[] {
  return files.flatMap((file) =>
    projectImports(file)
      .filter((target) => inFolder(target, forbidden))
      .map((target) => `${file} -> ${target}`),
  );
}

describe("boundaries", () => {
  it("lib/ domain folders never import lib/api", () => {
    const domain = readdirSync("lib").filter(
      (name) => statSync(path.join("lib", name)).isDirectory() && !SURFACES.has(name),
    );
    expect(domain).toEqual(expect.arrayContaining(["orders", "tables", "exports", "downloads", "keys"]));
    expect(
      violations(
        domain.flatMap((name) => sourceFiles(path.join("lib", name))),
        "lib/api",
      ),
    ).toEqual([]);
  });

  it("app/ files never import the database client", () => {
    expect(violations(sourceFiles("app"), "lib/db")).toEqual([]);
  });

  it("finds a violation where there is one", () => {
    expect(violations(["lib/api/dispatch.ts"], "lib/api")).not.toEqual([]);
  });
});
