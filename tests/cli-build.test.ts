import { execFile } from "node:child_process";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { staleReason } from "../scripts/cli-build.mjs";

/**
 * `npm run admin` runs the built CLI (scripts/built.mjs), building it first when it is missing or older than a
 * file it was built from (issue #38). Built here into a folder of the test's own (CLI_BUILD_DIR), so the build the
 * other tests run is never replaced under them.
 */

let buildDir: string;

beforeAll(async () => {
  buildDir = await fs.mkdtemp(path.join(os.tmpdir(), "cli-build-"));
});

afterAll(async () => {
  if (buildDir) await fs.rm(buildDir, { recursive: true, force: true });
});

function launch(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) =>
    execFile(
      process.execPath,
      ["scripts/built.mjs", "admin", ...args],
      { env: { ...process.env, CLI_BUILD_DIR: buildDir } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

const current = async () =>
  JSON.parse(await fs.readFile(path.join(buildDir, "current.json"), "utf8")) as {
    dir: string;
    startedAt: number;
    inputs: string[];
  };

describe("the built scripts' launcher", () => {
  it("builds the CLI when missing, reuses it while fresh and builds it again when a source is newer", async () => {
    const first = await launch("help");
    expect(first.stderr).toMatch(
      /^Compiled the operator CLI, server and worker scripts into \S+ in [\d.]+ s \(no build yet\)\.\nUsage: npm run admin/,
    );
    const build = await current();
    expect(build.inputs).toEqual(expect.arrayContaining(["scripts/admin.ts", "lib/engine/engine-child.ts"]));
    // The engine's child process is bundled next to the CLI, so the CLI never starts it through tsx.
    await fs.access(path.join(buildDir, build.dir, "engine-child.mjs"));
    // And what `npm start` and `npm run worker` run.
    for (const script of ["serve", "http-server", "worker"])
      await fs.access(path.join(buildDir, build.dir, `${script}.mjs`));

    const again = await launch("help");
    expect(again.stderr).toMatch(/^Usage: npm run admin/);
    expect(await current()).toEqual(build);

    // As if scripts/admin.ts had been saved after the build started (the sources themselves are left alone).
    await fs.writeFile(path.join(buildDir, "current.json"), JSON.stringify({ ...build, startedAt: 0 }));
    const stale = await launch("help");
    expect(stale.stderr).toMatch(
      /^Compiled the operator CLI, server and worker scripts into \S+ in [\d.]+ s \(\S+ changed\)\.\nUsage: npm run admin/,
    );
    expect((await current()).dir).not.toBe(build.dir);
  });

  it("names the scripts it runs when asked for another", async () => {
    const result = await new Promise<{ code: number; stderr: string }>((resolve) =>
      execFile(process.execPath, ["scripts/built.mjs", "engine-child"], (error, _stdout, stderr) =>
        resolve({ code: error ? Number(error.code ?? 1) : 0, stderr }),
      ),
    );
    expect(result).toEqual({
      code: 1,
      stderr: "Usage: node scripts/built.mjs admin|serve|worker [arguments]\n",
    });
  });

  it.each([
    ["no build", undefined, "no build yet"],
    ["an input saved after the build started", { startedAt: 0 }, "package.json changed"],
    ["an input gone", { inputs: ["package.json", "scripts/no-such-file.ts"] }, "scripts/no-such-file.ts is gone"],
    ["every input older than the build", {}, undefined],
  ])("calls a build stale for %s", (_case, change, reason) => {
    const build = { dir: "x", startedAt: Date.now() + 60_000, inputs: ["package.json"], ...change };
    expect(staleReason(change === undefined ? undefined : build)).toBe(reason);
  });
});
