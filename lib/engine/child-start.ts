import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** The TypeScript loader the engine process starts with when it runs from source. */
const TSX_PACKAGE = "tsx";

/**
 * How an engine process starts: from source with tsx; beside the CLI bundle's engine-child.mjs (scripts/cli-build.mjs)
 * as plain JavaScript; inside Next.js's server bundle (no file of its own) from the source under the working
 * directory npm scripts start in. Paths are built at run time (turbopackIgnore): Next.js bundles neither child nor tsx.
 */
export function childStart(): { entry: string; execArgv: string[] } {
  const here = fileURLToPath(import.meta.url);
  if (here.endsWith(".ts")) return fromSource(path.dirname(here));
  const bundled = path.join(/* turbopackIgnore: true */ path.dirname(here), "engine-child.mjs");
  if (existsSync(bundled)) return { entry: bundled, execArgv: [] };
  return fromSource(path.join(/* turbopackIgnore: true */ process.cwd(), "lib", "engine"));
}

function fromSource(folder: string): { entry: string; execArgv: string[] } {
  const resolveFromSource = createRequire(path.join(/* turbopackIgnore: true */ folder, "engine-pool.ts")).resolve;
  const loader = pathToFileURL(resolveFromSource(/* turbopackIgnore: true */ TSX_PACKAGE)).href;
  return { entry: path.join(/* turbopackIgnore: true */ folder, "engine-child.ts"), execArgv: ["--import", loader] };
}
