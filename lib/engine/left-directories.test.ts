import { spawn } from "node:child_process";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { keptDirectoryPrefix, removeLeftDirectories, workDirectoryPrefix } from "./left-directories";

let root: string;
beforeEach(async () => {
  root = await fs.mkdtemp(path.join(os.tmpdir(), "left-directories-"));
});
afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

/** The id of a process that has ended. */
async function endedPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", ""]);
  await new Promise((resolve) => child.once("exit", resolve));
  return child.pid!;
}

async function made(name: string): Promise<string> {
  await fs.mkdir(path.join(root, name, "spill"), { recursive: true });
  await fs.writeFile(path.join(root, name, "spill", "part.tmp"), "a buyer's rows");
  return name;
}

describe("directories left by processes that ended", () => {
  it("are removed at start; a live process's, and names of another shape, are left", async () => {
    const ended = await endedPid();
    const live = process.ppid;
    const ownPid = process.pid + 1_000_000;
    const gone = [
      await made(`${workDirectoryPrefix(ended)}aB3dE9`),
      await made(`${keptDirectoryPrefix(ended)}Zx81Qa`),
      // A process before this one had its id (a container's restart): not this process's own yet.
      await made(`${workDirectoryPrefix(ownPid)}q1w2e3`),
    ];
    const kept = [
      await made(`${workDirectoryPrefix(live)}r4t5y6`),
      await made(`${keptDirectoryPrefix(live)}u7i8o9`),
      await made("query-cache"),
      await made("work-notapid-x"),
    ];

    expect((await removeLeftDirectories(root, ownPid)).sort()).toEqual(gone.sort());
    expect((await fs.readdir(root)).sort()).toEqual(kept.sort());
  });

  it("finds nothing to remove under a root that is not there", async () => {
    expect(await removeLeftDirectories(path.join(root, "missing"))).toEqual([]);
  });
});
