// Runs `prisma generate` without Prisma's binary CDN, which these machines cannot reach.
// Generation never executes the schema engine, but the CLI wants a file at
// PRISMA_SCHEMA_ENGINE_BINARY before it starts; an empty placeholder satisfies it.
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";

const placeholder = path.resolve("node_modules/.cache/prisma-offline/schema-engine");
if (!process.env.PRISMA_SCHEMA_ENGINE_BINARY && !existsSync(placeholder)) {
  mkdirSync(path.dirname(placeholder), { recursive: true });
  writeFileSync(placeholder, "#!/bin/sh\necho 'placeholder: the schema engine is not available offline' >&2\nexit 1\n");
  chmodSync(placeholder, 0o755);
}
execFileSync(path.resolve("node_modules/.bin/prisma"), ["generate"], {
  stdio: "inherit",
  env: { PRISMA_SCHEMA_ENGINE_BINARY: placeholder, ...process.env, PRISMA_HIDE_UPDATE_MESSAGE: "1" },
});
