import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { SOCIAL_PLATFORMS } from "../lib/schemas/social-platforms";
import { benchDatabaseUrl, ensureDatabaseExists, log, ratio, report, round, run } from "./lib/common";
import { migrate } from "../lib/db/migrate";

/**
 * `social:import` of 100,000 profiles (BENCH_PROFILES) from NDJSON, with a few bad lines, through
 * the operator CLI as operators run it (process start included). Goal: under a minute. Baseline
 * in the same run: PostgreSQL's own bulk load (`psql \copy`) of the same rows into a table of the
 * same shape and indexes, the floor for getting these rows into the database.
 */
const profiles = Number(process.env.BENCH_PROFILES ?? 100_000);
const databaseUrl = benchDatabaseUrl();
await ensureDatabaseExists(databaseUrl);
await migrate(databaseUrl);
const workDir = await fs.mkdtemp(path.join(os.tmpdir(), "bench-social-import-"));
const ndjson = path.join(workDir, "profiles.ndjson");
const tsv = path.join(workDir, "profiles.tsv");

const fetchedAt = "2026-11-01T12:00:00Z";
const jsonLines: string[] = [];
const tsvLines: string[] = [];
for (let i = 0; i < profiles; i++) {
  const platform = SOCIAL_PLATFORMS[i % SOCIAL_PLATFORMS.length]!;
  const profile = { name: `Bench ${i}`, followers: i, bio: "Collects public datasets.".repeat(3) };
  jsonLines.push(JSON.stringify({ platform, handle: `@BImp${i}`, fetched_at: fetchedAt, profile }));
  tsvLines.push([platform, `bimp${i}`, JSON.stringify(profile), fetchedAt].join("\t"));
  if (i % 10_000 === 5_000) jsonLines.push("{not json"); // bad lines, reported and skipped
}
await fs.writeFile(ndjson, jsonLines.join("\n") + "\n");
await fs.writeFile(tsv, tsvLines.join("\n") + "\n");
const badLines = jsonLines.length - profiles;

const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
const clear = () => pool.query(`DELETE FROM social_profiles WHERE handle LIKE 'bimp%'`);
try {
  await clear();
  log(`social:import of ${jsonLines.length} lines (${badLines} bad) through the CLI`);
  let started = performance.now();
  const cli = await run(
    process.execPath,
    ["--import", "tsx", "scripts/admin.ts", "social:import", "--path", ndjson, "--json"],
    {
      ...process.env,
      DATABASE_URL: databaseUrl,
    },
  );
  const cliSeconds = (performance.now() - started) / 1000;
  const outcome = JSON.parse(cli.stdout) as { imported: number; rejected: number };
  const { rows } = await pool.query(`SELECT count(*)::int AS n FROM social_profiles WHERE handle LIKE 'bimp%'`);
  if (outcome.imported !== profiles || outcome.rejected !== badLines || rows[0].n !== profiles) {
    throw new Error(`import lost or refused rows: ${JSON.stringify({ ...outcome, stored: rows[0].n })}`);
  }
  await clear();

  log("baseline: psql \\copy of the same rows into a table like social_profiles");
  await pool.query(
    `DROP TABLE IF EXISTS bench_social_copy; CREATE TABLE bench_social_copy (LIKE social_profiles INCLUDING ALL)`,
  );
  started = performance.now();
  const copy = await run("psql", [
    databaseUrl,
    "-v",
    "ON_ERROR_STOP=1",
    "-c",
    `\\copy bench_social_copy (platform, handle, profile, fetched_at) FROM '${tsv}'`,
  ]);
  const copySeconds = (performance.now() - started) / 1000;
  await pool.query(`DROP TABLE bench_social_copy`);
  if (copy.code !== 0) throw new Error("psql \\copy failed");

  await report(
    "social-import",
    {
      profiles,
      bad_lines: badLines,
      cli_seconds: round(cliSeconds),
      cli_profiles_per_s: Math.round(profiles / cliSeconds),
      copy_seconds: round(copySeconds),
      copy_profiles_per_s: Math.round(profiles / copySeconds),
      time_ratio_cli_to_copy: ratio(cliSeconds, copySeconds),
      goal: "under 60 s",
      goal_met: cliSeconds < 60,
    },
    `social-import: ${profiles} profiles (+${badLines} bad lines) in ${round(cliSeconds)} s through the CLI ` +
      `(goal < 60 s: ${cliSeconds < 60 ? "met" : "NOT met"}); psql \\copy of the same rows ${round(copySeconds)} s ` +
      `(${ratio(cliSeconds, copySeconds)}x)`,
  );
} finally {
  await pool.end();
  await fs.rm(workDir, { recursive: true, force: true });
}
