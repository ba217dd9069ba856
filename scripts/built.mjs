// `npm run admin`, `npm start`, `npm run worker`: `node scripts/built.mjs <script> [args]` runs a script of scripts/
// from its build (scripts/cli-build.mjs), made first if missing or stale, so that it starts without compiling
// TypeScript. The build runs in this process and the script is imported into it: no second Node start, and the
// script sees its own arguments as if started directly.
import module from "node:module";
import { pathToFileURL } from "node:url";
import { BUILT_SCRIPTS, COMPILE_CACHE, freshEntry } from "./cli-build.mjs";

/** What a user starts; the HTTP server and the engine's child process are started by the scripts themselves. */
const STARTABLE = Object.keys(BUILT_SCRIPTS).filter((script) => script !== "http-server" && script !== "engine-child");
const [name] = process.argv.splice(2, 1);
if (!STARTABLE.includes(name)) {
  console.error(`Usage: node scripts/built.mjs ${STARTABLE.join("|")} [arguments]`);
  process.exit(1);
}
// V8's compiled code of the script and of the packages it loads (Next.js, Prisma, pg, the AWS SDK...) is kept on
// disk and reused by the next start, which then takes a fraction of the CPU (docs/benchmarks.md, "The CLI's
// start"). Set in the environment, so the processes it starts (the HTTP server, engine processes) keep theirs too.
process.env.NODE_COMPILE_CACHE ??= COMPILE_CACHE;
module.enableCompileCache?.(process.env.NODE_COMPILE_CACHE);
await import(pathToFileURL(await freshEntry(name)).href);
