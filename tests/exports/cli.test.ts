import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportRunSchema } from "../../lib/schemas/exports";
import { createMigratedDatabase, type TestDatabase } from "../helpers/database";
import { TEST_AUTH_SECRET } from "../helpers/server";
import { sha256, startTestSftp, type TestSftp } from "./stores";

/**
 * `export:destination`, `export:test` and `export:run` as support staff run them (the contract's
 * operator CLI), against the ssh2 SFTP server on loopback: the JSON they print, the secrets they
 * never echo, and production's refusal without EXPORT_SECRETS_KEY.
 */

let database: TestDatabase;
let workDir: string;
let sftp: TestSftp;
const secretsKey = randomBytes(32).toString("base64");

beforeAll(async () => {
  database = await createMigratedDatabase("exports_cli");
  workDir = await fs.mkdtemp(path.join(os.tmpdir(), "exports-cli-"));
  sftp = await startTestSftp();
});

afterAll(async () => {
  await sftp?.stop();
  await database?.drop();
  if (workDir) await fs.rm(workDir, { recursive: true, force: true });
});

type Result = { code: number; stdout: string; stderr: string };

function admin(args: string[], env: Record<string, string> = {}): Promise<Result> {
  return new Promise((resolve) => {
    execFile(
      path.resolve("node_modules/.bin/tsx"),
      ["scripts/admin.ts", ...args, "--json"],
      {
        env: {
          ...process.env,
          DATABASE_URL: database.url,
          STORAGE_DIR: path.join(workDir, "storage"),
          STORAGE_DRIVER: "local",
          AUTH_SECRET: TEST_AUTH_SECRET,
          EXPORT_SECRETS_KEY: secretsKey,
          EXPORT_ALLOW_PRIVATE: "true",
          ...env,
        },
      },
      (error, stdout, stderr) =>
        resolve({ code: error ? ((error.code as number | undefined) ?? 1) : 0, stdout, stderr }),
    );
  });
}

async function json(args: string[]): Promise<Record<string, unknown>> {
  const result = await admin(args);
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as Record<string, unknown>;
}

async function configFile(name: string, fields: Record<string, unknown>): Promise<string> {
  const file = path.join(workDir, name);
  await fs.writeFile(file, JSON.stringify(fields));
  return file;
}

describe("the operator's export commands", { timeout: 300_000 }, () => {
  it("set a destination up, test it and export an order to it, waiting for the run", { timeout: 300_000 }, async () => {
    const email = `cli-export-${Date.now()}@example.com`;
    await json(["buyer:create", "--email", email]);
    const order = (await json(["order:create", "--email", email, "--name", "CLI export", "--status", "delivered"])) as {
      id: string;
    };
    const content = randomBytes(200_000);
    const source = path.join(workDir, "data.bin");
    await fs.writeFile(source, content);
    await json(["order:add-file", "--order", order.id, "--path", source]);
    const config = await configFile("sftp.json", {
      host: sftp.host,
      port: sftp.port,
      username: sftp.username,
      password: sftp.password,
      directory: "/lake",
      host_key_sha256: sftp.fingerprint(),
    });
    const created = await admin([
      "export:destination",
      ...["--email", email, "--name", "Lake", "--type", "sftp", "--config", config],
      ...["--template", "{date}/{order_id}/{file_name}"],
    ]);
    expect(created.code).toBe(0);
    expect(created.stdout + created.stderr).not.toContain(sftp.password);
    const { id } = JSON.parse(created.stdout) as { id: string };
    expect(id).toMatch(/^exd_[0-9a-f]{32}$/);

    expect(await json(["export:test", "--destination", id])).toEqual({
      ok: true,
      message: expect.stringMatching(
        /^Wrote, read back and deleted _dataset-access-connection-test-.*\.txt in \/lake on /,
      ),
    });

    const { runs } = (await json(["export:run", "--order", order.id, "--destination", id, "--wait"])) as {
      runs: unknown[];
    };
    expect(runs).toHaveLength(1);
    const run = exportRunSchema.parse(runs[0]);
    expect(run).toMatchObject({
      destination: { id, type: "sftp", name: "Lake" },
      trigger: "manual",
      order_id: order.id,
      state: "completed",
      files: 1,
      bytes: content.length,
      error: null,
    });
    const date = new Date().toISOString().slice(0, 10);
    expect(run.manifest_key).toBe(`/lake/${date}/${order.id}/_manifest.json`);
    expect(sha256(await fs.readFile(path.join(sftp.root, "lake", date, order.id, "data.bin")))).toBe(sha256(content));
  });

  it.each([
    [
      "a secret with a control character",
      {
        host: "sftp.example.com",
        username: "u",
        password: "top-secret\u0007",
        directory: "/d",
        host_key_sha256: `SHA256:${"A".repeat(43)}`,
      },
      /The password contains control characters/,
    ],
    ["a file that is not JSON", "not json at all: top-secret", /is not a JSON file/],
    [
      "a path outside the chosen directory",
      {
        host: "sftp.example.com",
        username: "u",
        password: "top-secret",
        directory: "/d/../etc",
        host_key_sha256: `SHA256:${"A".repeat(43)}`,
      },
      /cannot contain \. or \.\./,
    ],
  ])("refuse %s without echoing any of the file", async (_what, fields, problem) => {
    const email = `cli-refused-${Date.now()}@example.com`;
    await json(["buyer:create", "--email", email]);
    const file = path.join(workDir, "bad.json");
    await fs.writeFile(file, typeof fields === "string" ? fields : JSON.stringify(fields));
    const result = await admin([
      "export:destination",
      "--email",
      email,
      "--name",
      "x",
      "--type",
      "sftp",
      "--config",
      file,
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(problem);
    expect(result.stdout + result.stderr).not.toContain("top-secret");
  });

  it("refuse to set up a destination in production without EXPORT_SECRETS_KEY, naming it", async () => {
    const email = `cli-production-${Date.now()}@example.com`;
    await json(["buyer:create", "--email", email]);
    const config = await configFile("s3.json", {
      bucket: "lake",
      endpoint: "https://s3.example.com",
      access_key_id: "AKIA",
      secret_access_key: "secret",
    });
    const result = await admin(
      ["export:destination", "--email", email, "--name", "x", "--type", "s3", "--config", config],
      { NODE_ENV: "production", EXPORT_SECRETS_KEY: "" },
    );
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout)).toEqual({
      error: {
        code: "export_not_configured",
        message: expect.stringMatching(/^Exports need EXPORT_SECRETS_KEY in production/),
      },
    });
  });
});
