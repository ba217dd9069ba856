import { createWriteStream, promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { afterAll, describe, expect, it } from "vitest";
import { readProfile } from "../../lib/datasets/profile";
import { UnreadableFileError } from "../../lib/engine/checks";

/**
 * A 2 GB CSV that is one line: DuckDB stops at its 2 MB line limit instead of reading it all, and
 * the profile fails with a sentence. (The worker's path for a long line is in profiles.test.ts.)
 */

const workDir = await fs.mkdtemp(path.join(os.tmpdir(), "huge-line-"));
afterAll(() => fs.rm(workDir, { recursive: true, force: true }));

describe("a 2 GB single line", () => {
  it("is refused by DuckDB at its line limit, without reading the line into memory", { timeout: 120_000 }, async () => {
    const file = path.join(workDir, "one-line.csv");
    const chunk = Buffer.alloc(64 * 1024 * 1024, "a");
    await pipeline(
      (async function* () {
        yield "header\n";
        for (let i = 0; i < 32; i++) yield chunk;
      })(),
      createWriteStream(file),
    );
    expect((await fs.stat(file)).size).toBeGreaterThan(2 * 1024 ** 3);
    const before = process.memoryUsage().rss;
    const error = await readProfile(file, "csv", null).catch((failure: unknown) => failure);
    expect(error).not.toBeInstanceOf(UnreadableFileError); // DuckDB's own refusal, not a check of ours
    expect((error as Error).message).toMatch(/Maximum line size of \d+ bytes exceeded/);
    expect(process.memoryUsage().rss - before).toBeLessThan(512 * 1024 * 1024);
  });
});
