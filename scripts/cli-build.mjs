// The scripts built: the operator CLI, the server's launcher and HTTP server, the job worker and the engine's
// child process, bundled by esbuild into .build/cli, so that `npm run admin`, `npm start` and `npm run worker`
// start without compiling TypeScript (issue #38: 1.5 CPU-seconds a CLI call; the HTTP server was ready after
// 8.4-9.3 s from source, 3.9-4.2 s built, on a loaded machine). `npm run build` makes it; the launcher
// (scripts/built.mjs) makes it again whenever one of the files it was built from has changed since.
// Run directly: `node scripts/cli-build.mjs` builds; with --if-stale, only when the build is missing or stale.
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(import.meta.dirname, "..");
/** CLI_BUILD_DIR elsewhere: for the test of the launcher, which must not replace the build other tests run. */
const OUT = path.resolve(ROOT, process.env.CLI_BUILD_DIR ?? ".build/cli");
/** Names the current build's folder, its start time and the files it was made from. */
const CURRENT = path.join(OUT, "current.json");
/** V8's compiled code of the built scripts and of the packages they load, kept for the next start. */
export const COMPILE_CACHE = path.join(OUT, "compile-cache");
/** The scripts built, by the name of their entry file (`<name>.mjs`). */
export const BUILT_SCRIPTS = {
  admin: "scripts/admin.ts",
  serve: "scripts/serve.ts",
  "http-server": "scripts/http-server.ts",
  worker: "scripts/worker.ts",
  "engine-child": "lib/engine/engine-child.ts",
};
/** Older builds are removed after a day: a command still running from one may yet start an engine process. */
const KEEP_OLD_BUILDS_MS = 24 * 3600_000;

/** The current build, or undefined when there is none. */
function currentBuild() {
  try {
    return JSON.parse(readFileSync(CURRENT, "utf8"));
  } catch {
    return undefined;
  }
}

/** Why the build must be made again (a sentence), or undefined when it is fresh: one stat per file it came from. */
export function staleReason(build) {
  if (!build) return "no build yet";
  for (const input of build.inputs) {
    let modified;
    try {
      modified = statSync(path.resolve(ROOT, input)).mtimeMs;
    } catch {
      return `${input} is gone`;
    }
    if (modified >= build.startedAt) return `${input} changed`;
  }
  return undefined;
}

/** Bundles the scripts into a folder of its own and makes it the current build; returns that folder. */
export async function buildScripts() {
  const { build } = await import("esbuild");
  const startedAt = Date.now();
  const dir = `${startedAt}-${process.pid}`;
  const outdir = path.join(OUT, dir);
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: BUILT_SCRIPTS,
    outdir,
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node22",
    outExtension: { ".js": ".mjs" },
    // Packages load from node_modules as they are (native DuckDB, pino's workers); only the project's code is bundled.
    packages: "external",
    metafile: true,
    logLevel: "warning",
  });
  const inputs = [...Object.keys(result.metafile.inputs), path.relative(ROOT, fileURLToPath(import.meta.url))];
  // Written aside and renamed: a CLI starting meanwhile reads the previous build or this one, never half of one.
  const pending = `${CURRENT}.${process.pid}`;
  writeFileSync(pending, JSON.stringify({ dir, startedAt, inputs }));
  renameSync(pending, CURRENT);
  for (const old of readdirSync(OUT)) {
    const builtAt = Number(old.split("-")[0]);
    if (old !== dir && Number.isFinite(builtAt) && startedAt - builtAt > KEEP_OLD_BUILDS_MS)
      rmSync(path.join(OUT, old), { recursive: true, force: true });
  }
  return outdir;
}

/**
 * The entry file of script `name` in a fresh build: the current one, or a new one made now (said on stderr, as
 * it takes a second).
 */
export async function freshEntry(name) {
  const build = currentBuild();
  const reason = staleReason(build);
  if (reason === undefined) return path.join(OUT, build.dir, `${name}.mjs`);
  const started = Date.now();
  const outdir = await buildScripts();
  // Said once, the first line a fresh `npm test` or `npm run admin` prints: what was made, where, and why now.
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  process.stderr.write(
    `Compiled the operator CLI, server and worker scripts into ${path.relative(ROOT, OUT)} in ${seconds} s (${reason}).\n`,
  );
  return path.join(outdir, `${name}.mjs`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  mkdirSync(OUT, { recursive: true });
  if (process.argv.includes("--if-stale")) await freshEntry("admin");
  else console.log(`Built the scripts: ${path.relative(ROOT, await buildScripts())}`);
}
