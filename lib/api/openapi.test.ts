import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { API_ERRORS } from "./problem";
import { buildOpenApiDocument } from "./openapi";

/** The project files a module imports, directly or not (relative and `@/` imports; packages are not followed). */
function projectImports(entry: string): Set<string> {
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const { fileName } of ts.preProcessFile(readFileSync(file, "utf8"), true, true).importedFiles) {
      const base = fileName.startsWith("@/")
        ? path.resolve(fileName.slice(2))
        : fileName.startsWith(".")
          ? path.resolve(path.dirname(file), fileName)
          : undefined;
      const resolved =
        base && [`${base}.ts`, `${base}.tsx`, path.join(base, "index.ts")].find((candidate) => existsSync(candidate));
      if (resolved) visit(resolved);
    }
  };
  visit(path.resolve(entry));
  return seen;
}

describe("the OpenAPI document", () => {
  it("is built without loading the database client", () => {
    const loaded = [...projectImports("pages/api/v1/openapi.json.ts")].map((file) => path.relative(".", file));
    expect(loaded).toContain("lib/schemas/api.ts");
    expect(loaded.filter((file) => file.startsWith("lib/db/"))).toEqual([]);
  });

  it("answers each error code with the status of the one error table", () => {
    const document = buildOpenApiDocument("https://example.test/api/v1");
    for (const operations of Object.values(document.paths ?? {})) {
      for (const operation of Object.values(
        operations as Record<string, { responses: Record<string, { description: string }> }>,
      )) {
        for (const [status, response] of Object.entries(operation.responses)) {
          for (const [, code] of response.description.matchAll(/`([a-z_]+)`/g)) {
            expect(API_ERRORS[code as keyof typeof API_ERRORS]?.status, code).toBe(Number(status));
          }
        }
      }
    }
  });
});
