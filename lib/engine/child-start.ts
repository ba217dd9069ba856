import { existsSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
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

/** The niceness an engine process is asked to run at (./query-pool.ts), read by the process itself. */
export const ENGINE_NICE_VARIABLE = "DATASET_ENGINE_NICE";

/**
 * Lowers this process's CPU priority to the niceness its parent asked for, before DuckDB starts:
 * on Linux a niceness belongs to each thread, so every thread running now is set (Node's own), and
 * the threads made later (libuv's, DuckDB's) take it from the thread that makes them.
 */
export function takeAskedPriority(): void {
  const nice = Number(process.env[ENGINE_NICE_VARIABLE] || 0);
  if (!Number.isInteger(nice) || nice <= 0) return;
  let threads: number[] = [0];
  try {
    threads = readdirSync("/proc/self/task").map(Number);
  } catch {
    // Not Linux: the niceness is the process's, set through its main thread.
  }
  for (const thread of threads) {
    try {
      os.setPriority(thread, nice);
    } catch {
      // A thread that ended meanwhile.
    }
  }
}
