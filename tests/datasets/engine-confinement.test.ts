import { spawn } from "node:child_process";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { datasetEngineSettings, privateTempRoot, withTempDir } from "../../lib/engine/engine";
import { workDirectoryPrefix } from "../../lib/engine/left-directories";
import { closeEnginePool, runEngineTask } from "../../lib/engine/engine-pool";

/**
 * The data engine's temporary directory and confinement: its root must be this user's own (the
 * server and the worker refuse to start otherwise), every task's directory is private, and a task's
 * DuckDB reaches only its own directory and the files handed to it.
 */

let base: string;
beforeAll(async () => {
  base = await fs.mkdtemp(path.join(os.tmpdir(), "engine-confinement-"));
  // Other users must be able to reach what the tests make under it (the `nobody` cases).
  await fs.chmod(base, 0o755);
});
afterAll(async () => {
  await closeEnginePool();
  await fs.rm(base, { recursive: true, force: true });
});

const settingsFor = (tempDir: string) => datasetEngineSettings({ DATASET_TEMP_DIR: tempDir });
const isRoot = process.getuid?.() === 0;

describe("the temporary root", () => {
  it("is created private (0700) when missing", async () => {
    const root = path.join(base, "fresh", "engine");
    expect(await privateTempRoot(settingsFor(root))).toBe(root);
    expect((await fs.stat(root)).mode & 0o777).toBe(0o700);
  });

  it("is refused when group or others can enter it, naming DATASET_TEMP_DIR", async () => {
    const root = path.join(base, "open");
    await fs.mkdir(root, { mode: 0o777 });
    await fs.chmod(root, 0o777);
    await expect(privateTempRoot(settingsFor(root))).rejects.toThrow(
      /DATASET_TEMP_DIR\) cannot be used: other users have access to it \(mode 0777\)/,
    );
  });

  it("is refused when it is a symbolic link", async () => {
    const target = path.join(base, "target");
    await fs.mkdir(target, { mode: 0o700 });
    const link = path.join(base, "link");
    await fs.symlink(target, link);
    await expect(privateTempRoot(settingsFor(link))).rejects.toThrow(/it is a symbolic link/);
  });

  it.runIf(isRoot)(
    `is refused when another user owns it, even with mode 0700${isRoot ? "" : " (skipped: needs root)"}`,
    async () => {
      const root = path.join(base, "nobodys");
      await fs.mkdir(root, { mode: 0o700 });
      await fs.chown(root, 65534, 65534);
      await expect(privateTempRoot(settingsFor(root))).rejects.toThrow(/belongs to user id 65534/);
    },
  );

  it("makes `npm start` and `npm run worker` refuse to start, with a message naming DATASET_TEMP_DIR", async () => {
    const root = path.join(base, "hostile");
    await fs.mkdir(root);
    await fs.chmod(root, 0o777);
    if (isRoot) await fs.chown(root, 65534, 65534);
    // As `npm start` and `npm run worker` run them: built.
    for (const args of [["serve", "start"], ["worker"]]) {
      const { code, output } = await run([path.resolve("scripts/built.mjs"), ...args], {
        DATASET_TEMP_DIR: root,
        // Neither gets as far as the database: the check comes first.
        DATABASE_URL: "postgresql://nobody@127.0.0.1:1/none",
        PORT: "1",
        AUTH_SECRET: "test-secret-0123456789abcdefghijklmnopqrstuvwxyz",
      });
      expect(code, output).not.toBe(0);
      expect(output).toMatch(/DATASET_TEMP_DIR/);
      expect(output).not.toMatch(/Listening on/);
    }
  });
  it("lets `npm start` and `npm run worker` remove what processes that ended left in it, first", async () => {
    const ended = spawn(process.execPath, ["-e", ""]);
    await new Promise((resolve) => ended.once("exit", resolve));
    for (const args of [["serve", "start"], ["worker"]]) {
      const root = await fs.mkdtemp(path.join(base, "left-"));
      const left = path.join(root, `${workDirectoryPrefix(ended.pid!)}k3Jx9a`);
      const live = path.join(root, `${workDirectoryPrefix(process.pid)}p0Qr7z`);
      for (const directory of [left, live]) {
        await fs.mkdir(path.join(directory, "spill"), { recursive: true });
        await fs.writeFile(path.join(directory, "spill", "rows.tmp"), "a buyer's rows");
      }
      const { output } = await run([path.resolve("scripts/built.mjs"), ...args], {
        DATASET_TEMP_DIR: root,
        // The removal comes before the database, which this one cannot reach.
        DATABASE_URL: "postgresql://nobody@127.0.0.1:1/none",
        PORT: "1",
        AUTH_SECRET: "test-secret-0123456789abcdefghijklmnopqrstuvwxyz",
      });
      expect(await fs.readdir(root), output).toEqual([path.basename(live)]);
    }
  });
});

describe("a task's directory", () => {
  it("is fresh and private (0700) under the root, and gone afterwards", async () => {
    const root = path.join(base, "tasks");
    process.env.DATASET_TEMP_DIR = root;
    try {
      const seen = await withTempDir(async (directory) => {
        expect(path.dirname(directory)).toBe(root);
        expect((await fs.stat(directory)).mode & 0o777).toBe(0o700);
        return directory;
      });
      await expect(fs.stat(seen)).rejects.toThrow(/ENOENT/);
    } finally {
      delete process.env.DATASET_TEMP_DIR;
    }
  });
});

describe("a task's DuckDB", () => {
  it("reads the file handed to it, and refuses any other", async () => {
    const handed = path.join(base, "handed.csv");
    const other = path.join(base, "other.csv");
    await fs.writeFile(handed, "a,b\n1,2\n");
    await fs.writeFile(other, "secret\n1\n");
    await withTempDir(async (directory) => {
      const profile = await runEngineTask(
        "profile",
        { file: handed, format: "csv", compression: null },
        {
          directory,
          readable: [handed],
        },
      );
      expect(profile.rows).toBe(1);
      await expect(
        runEngineTask("profile", { file: other, format: "csv", compression: null }, { directory, readable: [handed] }),
      ).rejects.toThrow(/Permission Error|disabled by configuration/);
    });
  });

  it("writes only inside its own directory", async () => {
    const handed = path.join(base, "to-convert.csv");
    await fs.writeFile(handed, "a\n1\n");
    await withTempDir(async (directory) => {
      const outside = path.join(base, "escaped.parquet");
      await expect(
        runEngineTask(
          "rendition",
          { source: handed, from: { format: "csv", compression: null }, format: "parquet", target: outside },
          { directory, readable: [handed] },
        ),
      ).rejects.toThrow(/Permission Error|disabled by configuration/);
      await expect(fs.stat(outside)).rejects.toThrow(/ENOENT/);
    });
  });
});

function run(args: string[], env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, {
      env: { ...process.env, NODE_ENV: "production", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}
