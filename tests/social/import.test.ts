import { execFile } from "node:child_process";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SOCIAL_PLATFORMS } from "../../lib/schemas/social-platforms";
import { createMigratedDatabase, type TestDatabase } from "../helpers/database";

let database: TestDatabase;
let workDir: string;
beforeAll(async () => {
  database = await createMigratedDatabase("social_import");
  workDir = await fs.mkdtemp(path.join(os.tmpdir(), "social-import-"));
});
afterAll(async () => {
  await database?.drop();
  await fs.rm(workDir, { recursive: true, force: true });
});

const GOOD_LINES = 100_000;
/** Bad lines, by the line number they are written at, with the reason the import must give. */
const BAD_LINES = new Map<number, [string, RegExp]>([
  [1, ["{not json", /not valid JSON/]],
  [2_500, [JSON.stringify({ platform: "myspace", handle: "tom" }), /platform/]],
  [33_333, [JSON.stringify({ platform: "x", handle: "way_too_long_for_x_handles" }), /not a valid x handle/]],
  [50_001, [JSON.stringify({ platform: "instagram" }), /handle/]],
  [77_777, [JSON.stringify({ platform: "tiktok", handle: "ok_handle", fetched_at: "yesterday" }), /fetched_at/]],
  [100_006, ["[1, 2, 3]", /expected object/i]],
]);

describe("social:import of 100,000 profiles", () => {
  it("imports every good line and reports every bad one with its line number and reason", async () => {
    const file = path.join(workDir, "profiles.ndjson");
    const lines: string[] = [];
    let good = 0;
    for (let lineNumber = 1; good < GOOD_LINES || lines.length < Math.max(...BAD_LINES.keys()); lineNumber++) {
      const bad = BAD_LINES.get(lineNumber);
      if (bad) {
        lines.push(bad[0]);
        continue;
      }
      const platform = SOCIAL_PLATFORMS[good % SOCIAL_PLATFORMS.length]!;
      lines.push(
        JSON.stringify({
          platform,
          handle: `@User${good}`, // valid on every platform
          fetched_at: "2026-11-01T12:00:00Z",
          profile: { name: `User ${good}`, followers: good, bio: "Collects public datasets.".repeat(3) },
        }),
      );
      good++;
    }
    await fs.writeFile(file, lines.join("\n") + "\n");

    const started = performance.now();
    const result = await runAdmin(["social:import", "--path", file, "--json"]);
    const seconds = (performance.now() - started) / 1000;
    // Timing is measured by `npm run bench:social-import`; here it is only reported.
    console.info(`social:import of ${lines.length} lines took ${seconds.toFixed(1)} s`);

    expect(result.code).toBe(1); // some lines were refused
    const report = JSON.parse(result.stdout) as { imported: number; errors: { line: number; reason: string }[] };
    expect(report.imported).toBe(GOOD_LINES);
    expect(report.errors.map((error) => error.line)).toEqual([...BAD_LINES.keys()]);
    for (const error of report.errors) expect(error.reason).toMatch(BAD_LINES.get(error.line)![1]);

    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const { rows } = await client.query(
        `SELECT count(*)::int AS profiles, count(DISTINCT profile->>'followers')::int AS distinct_followers,
                min((profile->>'followers')::int) AS first, max((profile->>'followers')::int) AS last
         FROM social_profiles`,
      );
      expect(rows[0]).toEqual({ profiles: GOOD_LINES, distinct_followers: GOOD_LINES, first: 0, last: GOOD_LINES - 1 });
      const { rows: sample } = await client.query(
        `SELECT handle, fetched_at FROM social_profiles WHERE platform = 'instagram' AND handle = 'user0'`,
      );
      expect(sample).toEqual([{ handle: "user0", fetched_at: new Date("2026-11-01T12:00:00Z") }]);
    } finally {
      await client.end();
    }
  });
});

describe("social:import with many bad lines", () => {
  it("reports every one of them, however long the report (no output cut short)", async () => {
    const file = path.join(workDir, "bad.ndjson");
    const lines = Array.from({ length: 20_000 }, (_, i) => JSON.stringify({ platform: "linkedin", handle: `no_${i}` }));
    await fs.writeFile(file, lines.join("\n"));
    const result = await runAdmin(["social:import", "--path", file, "--json"]);
    expect(result.code).toBe(1);
    const report = JSON.parse(result.stdout) as { imported: number; rejected: number; errors: { line: number }[] };
    expect(report.imported).toBe(0);
    expect(report.rejected).toBe(20_000);
    expect(report.errors.at(-1)).toEqual({
      line: 20_000,
      reason: expect.stringContaining("not a valid linkedin handle"),
    });
  });
});

function runAdmin(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      path.resolve("node_modules/.bin/tsx"),
      ["scripts/admin.ts", ...args],
      { env: { ...process.env, DATABASE_URL: database.url }, maxBuffer: 10 * 1024 * 1024 },
      (error, stdout, stderr) =>
        resolve({ code: error ? ((error.code as number | undefined) ?? 1) : 0, stdout, stderr }),
    );
  });
}
