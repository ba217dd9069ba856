import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { clientSyncCommands } from "../../lib/docs/commands";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startServer, type TestServer } from "../helpers/server";

/**
 * The client commands of the README and /getting-started (lib/docs/commands.ts; tests/docs/commands.test.ts holds the
 * README to them), run line by line as a new user would, in an empty folder, against the production server. npm is
 * pointed at a registry that answers nothing: the client's tarball must install from the site alone.
 */
let env: TestEnvironment;
let server: TestServer;
let key: string;
let folder: string;
let delivered: { id: string };
const files = { "a.csv": Buffer.from("a,b\n1,2\n"), "b.jsonl": Buffer.from('{"x":1}\n') };

beforeAll(async () => {
  env = await createTestEnvironment("readme_commands");
  const account = await buyer("readme-commands");
  key = (await apiKey(account.id)).secret;
  delivered = await order(account.id, { files });
  server = await startServer({ databaseUrl: env.database.url, storageDir: env.storageDir });
  folder = await fs.mkdtemp(path.join(os.tmpdir(), "readme-commands-"));
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
  if (folder) await fs.rm(folder, { recursive: true, force: true });
});

const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");

it("install and run both clients from the site, exactly as written", async () => {
  const script = clientSyncCommands(server.url);
  expect(script).toContain(`npm install ${server.url}/clients/dataset-access-client.tgz`);
  const { stdout, stderr } = await promisify(execFile)("bash", ["-euo", "pipefail", "-c", script], {
    cwd: folder,
    env: {
      ...process.env,
      DATASET_ACCESS_KEY: key,
      // Nothing may come from a registry, and nothing from this machine's npm set-up.
      npm_config_registry: "http://127.0.0.1:9/",
      npm_config_cache: path.join(folder, ".npm-cache"),
      npm_config_audit: "false",
      npm_config_fund: "false",
      npm_config_update_notifier: "false",
    },
    timeout: 120_000,
  }).catch((error: { stdout: string; stderr: string; message: string }) => {
    throw new Error(`${error.message}\n${error.stdout}\n${error.stderr}`);
  });
  expect(stderr).not.toMatch(/ERR!/);
  for (const [name, data] of Object.entries(files)) {
    const synced = await fs.readFile(path.join(folder, "datasets", delivered.id, name));
    expect(sha256(synced), `${name} after both syncs\n${stdout}`).toBe(sha256(data));
  }
  const installed = JSON.parse(
    await fs.readFile(path.join(folder, "node_modules/@dataset-access/client/package.json"), "utf8"),
  );
  expect(installed.name).toBe("@dataset-access/client");
});

it("offers the tarball's SHA-256 beside it, in sha256sum's format", async () => {
  const tarball = Buffer.from(await (await fetch(`${server.url}/clients/dataset-access-client.tgz`)).arrayBuffer());
  const line = await (await fetch(`${server.url}/clients/dataset-access-client.tgz.sha256`)).text();
  expect(line).toBe(`${sha256(tarball)}  dataset-access-client.tgz\n`);
});
