import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";

/**
 * The TypeScript client (`clients/typescript`, the `dataset-access` command) as an npm tarball this
 * server offers at /clients/dataset-access-client.tgz, so a buyer installs it from the site that
 * serves their data (`npm install <site>/clients/dataset-access-client.tgz`), never by an unscoped
 * name some registry could hold. Its one dependency (openapi-fetch) travels inside the tarball
 * (bundleDependencies): installing it needs no registry. `npm pack` fixes every file's time, so the
 * same sources give the same bytes and the same sha256.
 */

export const TYPESCRIPT_CLIENT_FILE = "dataset-access-client.tgz";
const SOURCE_DIR = "clients/typescript";
const BUNDLED = ["openapi-fetch", "openapi-typescript-helpers"];

export type ClientPackage = { bytes: Buffer; sha256: string };

const packageDir = () => path.resolve(".build/clients");
const packagePath = () => path.join(packageDir(), TYPESCRIPT_CLIENT_FILE);

let building: Promise<string> | undefined;

/**
 * The tarball, packed now if there is none yet or (outside production) its sources changed since.
 * `npm run build` packs it ahead (scripts/clients/pack-typescript.ts), so production never packs on
 * a request.
 */
export async function typescriptClientPackage(): Promise<ClientPackage> {
  if (!(await isFresh())) {
    building ??= packTypescriptClient().finally(() => (building = undefined));
    await building;
  }
  const bytes = await fs.readFile(packagePath());
  return { bytes, sha256: createHash("sha256").update(bytes).digest("hex") };
}

async function isFresh(): Promise<boolean> {
  const packed = await fs.stat(packagePath()).catch(() => undefined);
  if (!packed) return false;
  if (process.env.NODE_ENV === "production") return true;
  return (await newestSourceTime()) <= packed.mtimeMs;
}

/** When the client's sources (its src/, package.json and tsconfig.json) last changed, in ms since the epoch. */
export async function newestSourceTime(): Promise<number> {
  const files = await fs.readdir(path.resolve(SOURCE_DIR, "src"), { recursive: true });
  const times = await Promise.all(
    [...files.map((file) => path.join("src", file)), "package.json", "tsconfig.json"].map(
      async (file) => (await fs.stat(path.resolve(SOURCE_DIR, file))).mtimeMs,
    ),
  );
  return Math.max(...times);
}

/** Compiles the client, stages it with its bundled dependency and packs it into .build/clients. */
export async function packTypescriptClient(): Promise<string> {
  const run = promisify(execFile);
  const stage = await fs.mkdtemp(path.join(os.tmpdir(), "dataset-access-client-"));
  try {
    await run(process.execPath, [
      path.resolve("node_modules/typescript/bin/tsc"),
      "-p",
      SOURCE_DIR,
      "--outDir",
      path.join(stage, "dist"),
    ]);
    for (const name of BUNDLED) {
      await fs.cp(path.resolve("node_modules", name), path.join(stage, "node_modules", name), { recursive: true });
    }
    // What users install: the package's fields less what only builds it here.
    const published = JSON.parse(await fs.readFile(path.resolve(SOURCE_DIR, "package.json"), "utf8"));
    delete published.devDependencies;
    delete published.scripts;
    const fetchVersion = JSON.parse(
      await fs.readFile(path.resolve("node_modules/openapi-fetch/package.json"), "utf8"),
    ).version;
    await fs.writeFile(
      path.join(stage, "package.json"),
      JSON.stringify(
        { ...published, dependencies: { "openapi-fetch": fetchVersion }, bundleDependencies: ["openapi-fetch"] },
        null,
        2,
      ),
    );
    const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", stage], { cwd: stage });
    const { filename } = (JSON.parse(stdout) as { filename: string }[])[0]!;
    await fs.mkdir(packageDir(), { recursive: true });
    // A rename, so a reader never sees half a tarball.
    const partial = `${packagePath()}.${process.pid}.partial`;
    await fs.copyFile(path.join(stage, filename), partial);
    await fs.rename(partial, packagePath());
    return packagePath();
  } finally {
    await fs.rm(stage, { recursive: true, force: true });
  }
}
