// `npm run admin`: the operator CLI from its build (scripts/cli-build.mjs), made first if missing or stale, so
// a command starts without compiling TypeScript. The build runs in this process: no second Node start.
import module from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { freshCli } from "./cli-build.mjs";

// V8's compiled code of the CLI and of the packages it loads (Prisma, pg, the AWS SDK...) is kept on disk and
// reused by the next command, which then starts at a fraction of the CPU (docs/benchmarks.md, "The CLI's start").
module.enableCompileCache?.(path.resolve(import.meta.dirname, "../.build/cli/compile-cache"));
await import(pathToFileURL(await freshCli()).href);
