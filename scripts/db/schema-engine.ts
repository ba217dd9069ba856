import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { PrismaPg } from "@prisma/adapter-pg";
import { bindMigrationAwareSqlAdapterFactory } from "@prisma/driver-adapter-utils";

/**
 * Prisma's own schema engine, compiled to WebAssembly and shipped in the npm registry. The CLI's
 * native engine binary cannot be downloaded here; this one computes the same migration SQL
 * between two versions of schema.prisma. (It cannot introspect a live database through the pg
 * adapter, so the drift test compares the catalog with Prisma's datamodel itself.)
 */

type WasmSchemaEngine = {
  diff(params: unknown): Promise<{ exitCode: number; stdout: string | null }>;
  free(): void;
};

async function loadSchemaEngine() {
  const require = createRequire(import.meta.url);
  // Resolve the package's entry (its package.json is not exported) to find its directory.
  const packageDir = path.dirname(require.resolve("@prisma/schema-engine-wasm"));
  // The entry imports the .wasm as an ES module, which Node 20 cannot; instantiate it here.
  const bindings = await import(pathToFileURL(path.join(packageDir, "schema_engine_bg.js")).href);
  const wasmModule = new WebAssembly.Module(readFileSync(path.join(packageDir, "schema_engine_bg.wasm")));
  const instance = new WebAssembly.Instance(wasmModule, { "./schema_engine_bg.js": bindings });
  bindings.__wbg_set_wasm(instance.exports);
  (instance.exports.__wbindgen_start as () => void)();
  return bindings.SchemaEngine as { new: (...args: unknown[]) => Promise<WasmSchemaEngine> };
}

/**
 * The SQL that takes a database built from `fromSchema` (null: an empty one) to `toSchema`.
 * The engine connects to a PostgreSQL server (`serverUrl`) to learn its version; it changes nothing there.
 */
export async function diffSchemas(fromSchema: string | null, toSchema: string, serverUrl: string): Promise<string> {
  const SchemaEngine = await loadSchemaEngine();
  const adapterFactory = bindMigrationAwareSqlAdapterFactory(new PrismaPg({ connectionString: serverUrl }));
  const engine = await SchemaEngine.new({ datamodels: [["schema.prisma", toSchema]] }, () => {}, adapterFactory);
  const datamodel = (content: string) => ({ tag: "schemaDatamodel", files: [{ path: "schema.prisma", content }] });
  try {
    const result = await engine.diff({
      from: fromSchema === null ? { tag: "empty" } : datamodel(fromSchema),
      to: datamodel(toSchema),
      script: true,
      exitCode: null,
      filters: { externalTables: [], externalEnums: [] },
    });
    return hasStatements(result.stdout ?? "") ? (result.stdout ?? "") : "";
  } finally {
    engine.free();
  }
}

/** An empty diff comes back as a comment only. */
function hasStatements(sql: string): boolean {
  return sql.split("\n").some((line) => line.trim() !== "" && !line.trim().startsWith("--"));
}
