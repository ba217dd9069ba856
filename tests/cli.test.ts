import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { createReadStream, createWriteStream, promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashSecret } from "../lib/keys/secret";
import { createMigratedDatabase, type TestDatabase } from "./helpers/database";

let database: TestDatabase;
let storageDir: string;
let workDir: string;
let sql: pg.Client;

beforeAll(async () => {
  database = await createMigratedDatabase("cli");
  workDir = await fs.mkdtemp(path.join(os.tmpdir(), "cli-test-"));
  storageDir = path.join(workDir, "storage");
  sql = new pg.Client({ connectionString: database.url });
  await sql.connect();
});

afterAll(async () => {
  await sql?.end();
  await database?.drop();
  if (workDir) await fs.rm(workDir, { recursive: true, force: true });
});

type Result = { code: number; stdout: string; stderr: string };

/** Runs the operator CLI as an operator would, against the test database. */
function admin(...args: string[]): Promise<Result> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ["scripts/built.mjs", "admin", ...args],
      { env: { ...process.env, DATABASE_URL: database.url, STORAGE_DIR: storageDir }, maxBuffer: 10 * 1024 * 1024 },
      (error, stdout, stderr) =>
        resolve({ code: error ? ((error.code as number | undefined) ?? 1) : 0, stdout, stderr }),
    );
  });
}

async function adminJson(...args: string[]): Promise<Record<string, unknown>> {
  const result = await admin(...args, "--json");
  expect(result.stderr).toBe("");
  expect(result.code).toBe(0);
  return JSON.parse(result.stdout) as Record<string, unknown>;
}

async function sha256OfFile(file: string): Promise<string> {
  const hash = createHash("sha256");
  await pipeline(createReadStream(file), hash);
  return hash.digest("hex");
}

/** key:create for the round-trip buyer, varying what the bad-input cases vary. */
const keyCreateArgs = (permission: string, expiresDays: string) => [
  "key:create",
  "--email",
  "round.trip@example.com",
  "--name",
  "K",
  "--permission",
  permission,
  "--expires-days",
  expiresDays,
];

describe("the operator CLI", () => {
  it("creates a buyer, an order with a 50 MB file, delivers it and manages a key", async () => {
    const buyer = await adminJson("buyer:create", "--email", "Round.Trip@Example.com");
    expect(buyer).toMatchObject({
      id: expect.stringMatching(/^usr_[0-9a-f]{32}$/),
      email: "round.trip@example.com",
      created: true,
    });
    expect(await adminJson("buyer:create", "--email", "round.trip@example.com")).toMatchObject({
      id: buyer.id,
      created: false,
    });

    const order = await adminJson("order:create", "--email", "round.trip@example.com", "--name", "Prices Q3");
    expect(order).toEqual({ id: expect.stringMatching(/^ord_[0-9a-f]{32}$/), status: "unfinished" });

    const source = path.join(workDir, "prices.csv");
    await pipeline(
      (async function* () {
        for (let i = 0; i < 50; i++) yield randomBytes(1024 * 1024);
      })(),
      createWriteStream(source),
    );
    const expectedSha256 = await sha256OfFile(source);
    const file = await adminJson("order:add-file", "--order", String(order.id), "--path", source);
    expect(file).toEqual({
      id: expect.stringMatching(/^fil_[0-9a-f]{32}$/),
      name: "prices.csv",
      size: 50 * 1024 * 1024,
      sha256: expectedSha256,
      content_type: "text/csv",
      table: "prices",
    });

    expect(await adminJson("order:set-status", "--order", String(order.id), "--status", "delivered")).toMatchObject({
      status: "delivered",
    });

    const key = await adminJson(
      "key:create",
      ...["--email", "round.trip@example.com", "--name", "Warehouse sync", "--permission", "datasets:read"],
      ...["--expires-days", "90"],
    );
    expect(key).toMatchObject({
      id: expect.stringMatching(/^key_/),
      secret: expect.stringMatching(/^dak_/),
      permission: "datasets:read",
    });

    // All of it is in the database; the stored file is byte-identical; the key secret is not stored.
    const { rows: orders } = await sql.query(
      `SELECT o.status, o.delivered_at, f.name, f.size, f.sha256, f.content_type, f.storage_key
         FROM orders o JOIN order_files f ON f.order_id = o.id JOIN buyers b ON b.id = o.buyer_id
        WHERE b.email = 'round.trip@example.com'`,
    );
    expect(orders).toEqual([
      expect.objectContaining({
        status: "delivered",
        name: "prices.csv",
        size: String(50 * 1024 * 1024),
        sha256: expectedSha256,
      }),
    ]);
    expect(orders[0].delivered_at).toBeInstanceOf(Date);
    expect(await sha256OfFile(path.join(storageDir, orders[0].storage_key))).toBe(expectedSha256);

    // The buyer's security log says the operator made it.
    const { rows: logged } = await sql.query(
      `SELECT kind, actor, subject_id, detail FROM security_events WHERE subject_id = $1`,
      [key.id],
    );
    expect(logged).toEqual([
      { kind: "key_created", actor: "operator", subject_id: key.id, detail: "“Warehouse sync” (datasets:read)" },
    ]);

    const { rows: keys } = await sql.query(
      `SELECT secret_hash, prefix, last4, expires_at, revoked_at FROM api_keys WHERE id = $1`,
      [key.id],
    );
    const secret = String(key.secret);
    expect(keys[0]).toMatchObject({
      secret_hash: hashSecret(secret),
      prefix: secret.slice(0, 8),
      last4: secret.slice(-4),
      revoked_at: null,
    });
    const days = (keys[0].expires_at.getTime() - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(89.9);
    expect(days).toBeLessThanOrEqual(90);
    const { rows: leaked } = await sql.query(
      `SELECT count(*)::int AS n FROM api_keys WHERE secret_hash = $1 OR prefix = $1`,
      [secret],
    );
    expect(leaked[0].n).toBe(0);

    await adminJson("key:revoke", "--id", String(key.id));
    const { rows: revoked } = await sql.query(`SELECT revoked_at FROM api_keys WHERE id = $1`, [key.id]);
    expect(revoked[0].revoked_at).toBeInstanceOf(Date);
  });

  it("gates scrape:read keys on Social API access and imports profiles, reporting bad lines", async () => {
    await adminJson("buyer:create", "--email", "social@example.com");
    const keyArgs = [
      "key:create",
      "--email",
      "social@example.com",
      "--name",
      "Social",
      "--permission",
      "scrape:read",
      "--expires-days",
      "30",
    ];
    const refused = await admin(...keyArgs);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/Social API access, which is not enabled/);

    expect(
      await adminJson("social:enable", "--email", "social@example.com", "--allowance", "20", "--rate-per-minute", "5"),
    ).toMatchObject({
      enabled: true,
      allowance: 20,
      rate_per_minute: 5,
    });
    expect(await adminJson(...keyArgs)).toMatchObject({ permission: "scrape:read" });
    expect(await adminJson("social:disable", "--email", "social@example.com")).toMatchObject({ enabled: false });

    const ndjson = path.join(workDir, "profiles.ndjson");
    await fs.writeFile(
      ndjson,
      [
        JSON.stringify({ platform: "instagram", handle: "@Good.One", followers: 10 }),
        "{not json",
        JSON.stringify({ platform: "myspace", handle: "tom" }),
        JSON.stringify({ platform: "x", handle: "way_too_long_for_x_handles" }),
        "",
        JSON.stringify({
          platform: "x",
          handle: "Jack",
          fetched_at: "2026-01-02T03:04:05Z",
          profile: { name: "jack" },
        }),
      ].join("\n"),
    );
    const result = await admin("social:import", "--path", ndjson, "--json");
    expect(result.code).toBe(1);
    const report = JSON.parse(result.stdout);
    expect(report.imported).toBe(2);
    expect(report.errors).toEqual([
      { line: 2, reason: "not valid JSON" },
      { line: 3, reason: expect.stringContaining("platform") },
      { line: 4, reason: expect.stringContaining("not a valid x handle") },
    ]);
    const { rows } = await sql.query(
      `SELECT platform, handle, profile, fetched_at FROM social_profiles ORDER BY platform`,
    );
    expect(rows).toEqual([
      expect.objectContaining({ platform: "instagram", handle: "good.one", profile: { followers: 10 } }),
      { platform: "x", handle: "jack", profile: { name: "jack" }, fetched_at: new Date("2026-01-02T03:04:05Z") },
    ]);

    expect(await adminJson("social:platform", "--platform", "tiktok", "--available", "false")).toEqual({
      platform: "tiktok",
      available: false,
      retry_after: 300,
    });
  });

  it.each([
    [
      "an unknown e-mail",
      ["order:create", "--email", "nobody@example.com", "--name", "X"],
      /No buyer account with e-mail nobody@example.com/,
    ],
    ["a malformed e-mail", ["buyer:create", "--email", "not-an-email"], /"not-an-email" is not a valid e-mail address/],
    [
      "a bad status",
      ["order:create", "--email", "round.trip@example.com", "--name", "X", "--status", "paid"],
      /--status: .*"unfinished"\|"delivered"\|"refunded"/,
    ],
    [
      "a missing file",
      ["order:add-file", "--order", "ord_x", "--path", "/nonexistent/file.csv"],
      /No file at \/nonexistent\/file.csv/,
    ],
    ["a directory as file", ["order:add-file", "--order", "ord_x", "--path", "/tmp"], /\/tmp is not a regular file/],
    [
      "an unknown order",
      ["order:set-status", "--order", "ord_nope", "--status", "delivered"],
      /No order with id ord_nope/,
    ],
    ["a wrong expiry", keyCreateArgs("datasets:read", "45"), /--expires-days: .*30\|90\|365/],
    ["an unknown permission", keyCreateArgs("admin", "30"), /--permission: /],
    ["an unknown key", ["key:revoke", "--id", "key_nope"], /No API key with id key_nope/],
    ["a missing option", ["order:create", "--email", "round.trip@example.com"], /--name is required/],
    ["an unknown option", ["buyer:create", "--email", "a@example.com", "--colour", "red"], /Unknown option '--colour'/],
    ["an unknown command", ["order:delete", "--order", "x"], /Unknown command "order:delete"/],
    ["an unknown platform", ["social:platform", "--platform", "myspace", "--available", "true"], /--platform: /],
    ["a non-boolean availability", ["social:platform", "--platform", "x", "--available", "maybe"], /--available: /],
    [
      "a zero allowance",
      ["social:enable", "--email", "round.trip@example.com", "--allowance", "0", "--rate-per-minute", "5"],
      /allowance must be a whole number/,
    ],
  ])("refuses %s with a clear message and exit code 1", async (_case, args, message) => {
    const result = await admin(...args);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(message);
    expect(result.stdout).toBe("");
    const asJson = await admin(...args, "--json");
    expect(asJson.code).toBe(1);
    expect(JSON.parse(asJson.stdout)).toEqual({ error: { code: expect.any(String), message: expect.any(String) } });
  });

  it.each([
    // (A NUL cannot reach a command line at all: the operating system's arguments end at it.)
    ["a DEL", "data\u007f.csv", /cannot contain control characters/],
    ["an escape sequence", "data\u001b[2J.csv", /cannot contain control characters/],
    ["a newline", "data\n.csv", /cannot contain control characters/],
    ["..", "..", /it needs a name/],
    ["a separator", "a/b.csv", /cannot contain \/ or \\/],
    ["a name over 245 bytes", `${"é".repeat(121)}.csv`, /longer than 245 bytes/],
  ])("refuses a file name with %s before storing anything", async (_case, name, message) => {
    const order = await adminJson("order:create", "--email", "round.trip@example.com", "--name", "Bad names");
    const source = path.join(workDir, "bad-name.csv");
    await fs.writeFile(source, "a,b\n1,2\n");
    const result = await admin("order:add-file", "--order", String(order.id), "--path", source, "--name", name);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(message);
    expect(result.stderr).not.toMatch(/\p{Cc}(?<!\n)/u); // the name is shown escaped, never raw
    await expect(fs.readdir(path.join(storageDir, String(order.id)))).rejects.toThrow(/ENOENT/);
  });

  it("files:profile profiles an order's data files added before profiles, reporting what it did", async () => {
    const order = await adminJson("order:create", "--email", "round.trip@example.com", "--name", "To profile");
    const files: Record<string, string> = {
      "prices.csv": "sku,price\nA,1.5\nB,2\n",
      "events.jsonl": '{"id":1}\n{"id":2}\n{"id":3}\n',
      "ragged.csv": "a,b\n1,2\n3,4,5\n",
      "photo.bin": "\u0000\u0001",
    };
    for (const [name, content] of Object.entries(files)) {
      await fs.writeFile(path.join(workDir, name), content);
      await adminJson("order:add-file", "--order", String(order.id), "--path", path.join(workDir, name));
    }
    expect(await adminJson("files:profile", "--order", String(order.id))).toEqual({
      profiled: 2,
      failed: 1,
      skipped: 1,
      errors: [],
    });
    const { rows } = await sql.query<{ name: string; profile_status: string; rows: string | null }>(
      "SELECT name, profile_status, rows FROM order_files WHERE order_id = $1 ORDER BY name",
      [order.id],
    );
    expect(rows).toEqual([
      { name: "events.jsonl", profile_status: "ready", rows: "3" },
      { name: "photo.bin", profile_status: "none", rows: null },
      { name: "prices.csv", profile_status: "ready", rows: "2" },
      { name: "ragged.csv", profile_status: "failed", rows: null },
    ]);
    // Again: the profiled and binary files are skipped, the failed one is tried again.
    // (--all also meets the other tests' orders: their random bytes named .csv fail again.)
    expect(await adminJson("files:profile", "--all")).toEqual({
      profiled: expect.any(Number),
      failed: expect.any(Number),
      skipped: expect.any(Number),
      errors: expect.any(Array),
    });
    expect(await adminJson("files:profile", "--order", String(order.id))).toEqual({
      profiled: 0,
      failed: 1,
      skipped: 3,
      errors: [],
    });
    const neither = await admin("files:profile");
    expect(neither.code).toBe(1);
    expect(neither.stderr).toMatch(/Give either --order ID or --all/);
    const unknown = await admin("files:profile", "--order", "ord_nope");
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/No order with id ord_nope/);
  });

  it("files:profile goes on past a file it cannot profile now, reports it and exits 1", async () => {
    const order = await adminJson("order:create", "--email", "round.trip@example.com", "--name", "One unreachable");
    for (const name of ["first.csv", "unreachable.csv", "last.csv"]) {
      await fs.writeFile(path.join(workDir, name), "a,b\n1,2\n");
      await adminJson("order:add-file", "--order", String(order.id), "--path", path.join(workDir, name));
    }
    // Its bytes point at a store this installation cannot reach: reading them fails (not the file's fault).
    const { rows } = await sql.query<{ id: string }>(
      "UPDATE order_files SET storage_key = 's3://no-such-bucket/unreachable.csv' WHERE order_id = $1 AND name = 'unreachable.csv' RETURNING id",
      [order.id],
    );
    const result = await admin("files:profile", "--order", String(order.id), "--json");
    expect(result.code).toBe(1);
    const report = JSON.parse(result.stdout);
    expect(report).toMatchObject({ profiled: 2, failed: 0, skipped: 0 });
    expect(report.errors).toEqual([{ file_id: rows[0]!.id, reason: expect.any(String) }]);
    const { rows: statuses } = await sql.query<{ name: string; profile_status: string }>(
      "SELECT name, profile_status FROM order_files WHERE order_id = $1 ORDER BY name",
      [order.id],
    );
    expect(statuses).toEqual([
      { name: "first.csv", profile_status: "ready" },
      { name: "last.csv", profile_status: "ready" },
      { name: "unreachable.csv", profile_status: "pending" },
    ]);
  });

  it("refuses a second file of the same name in an order and keeps no orphaned bytes", async () => {
    const order = await adminJson("order:create", "--email", "round.trip@example.com", "--name", "Dupes");
    const source = path.join(workDir, "same.txt");
    await fs.writeFile(source, "hello\n");
    await adminJson("order:add-file", "--order", String(order.id), "--path", source);
    const again = await admin("order:add-file", "--order", String(order.id), "--path", source);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already has a file named "same.txt"/);
    expect(await fs.readdir(path.join(storageDir, String(order.id)))).toHaveLength(1);
  });
});
