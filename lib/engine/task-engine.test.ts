import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openTaskEngine } from "./task-engine";

let base: string;
beforeAll(async () => {
  base = await fs.mkdtemp(path.join(os.tmpdir(), "task-engine-"));
});
afterAll(async () => {
  await fs.rm(base, { recursive: true, force: true });
});

const setting = async (engine: Awaited<ReturnType<typeof openTaskEngine>>, name: string) =>
  String((await engine.connection.runAndReadAll(`SELECT current_setting('${name}')`)).getRowsJson()[0]![0]);

describe("a task's directory in the engine", () => {
  it("is made private (0700) when the server left it to the engine, and spilled into", async () => {
    const directory = path.join(base, "work-1-left");
    const engine = await openTaskEngine({ directory, readable: [] });
    try {
      expect((await fs.lstat(directory)).mode & 0o777).toBe(0o700);
      expect(await setting(engine, "temp_directory")).toBe(path.join(directory, "spill"));
    } finally {
      engine.close();
    }
  });

  it("is refused when others can enter it, or when it is a link", async () => {
    const open = path.join(base, "work-1-open");
    await fs.mkdir(open, { mode: 0o700 });
    await fs.chmod(open, 0o755);
    const link = path.join(base, "work-1-link");
    await fs.symlink(open, link);
    for (const directory of [open, link]) {
      await expect(openTaskEngine({ directory, readable: [] })).rejects.toThrow(/not a private directory/);
    }
  });
});
