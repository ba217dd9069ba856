// The operator CLI built: scripts/admin.ts and the engine's child process bundled by esbuild into .build/cli,
// so `npm run admin` starts without compiling TypeScript (issue #38). `npm run build` makes it; the launcher
// (scripts/admin-cli.mjs) makes it again whenever one of the files it was built from has changed since.
// Run directly: `node scripts/cli-build.mjs` builds; with --if-stale, only when the build is missing or stale.
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(import.meta.dirname, "..");
/** CLI_BUILD_DIR elsewhere: for the test of the launcher, which must not replace the build other tests run. */
const OUT = path.resolve(ROOT, process.env.CLI_BUILD_DIR ?? ".build/cli");
/** Names the current build's folder, its start time and the files it was made from. */
const CURRENT = path.join(OUT, "current.json");
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

/** Bundles the CLI into a folder of its own and makes it the current build; returns its entry file. */
export async function buildCli() {
  const { build } = await import("esbuild");
  const startedAt = Date.now();
  const dir = `${startedAt}-${process.pid}`;
  const outdir = path.join(OUT, dir);
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: { admin: "scripts/admin.ts", "engine-child": "lib/engine/engine-child.ts" },
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
  return path.join(outdir, "admin.mjs");
}

/** The entry of a fresh build: the current one, or a new one made now (said on stderr, as it takes a second). */
export async function freshCli() {
  const build = currentBuild();
  const reason = staleReason(build);
  if (reason === undefined) return path.join(OUT, build.dir, "admin.mjs");
  const started = Date.now();
  const entry = await buildCli();
  process.stderr.write(`Built the operator CLI (${reason}) in ${((Date.now() - started) / 1000).toFixed(1)} s.\n`);
  return entry;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  mkdirSync(OUT, { recursive: true });
  if (process.argv.includes("--if-stale")) await freshCli();
  else console.log(`Built the operator CLI: ${path.relative(ROOT, await buildCli())}`);
}
