import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { promises as fs } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startServer, type TestServer } from "../helpers/server";

/**
 * clients/python/dataset_access.py, tested by its own unittest suite (run with the machine's
 * python3) against the production server on a real PostgreSQL: this loads the account it expects.
 */
let env: TestEnvironment;
let server: TestServer;
let expectations: Record<string, unknown>;
let key: string;

const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");

beforeAll(async () => {
  env = await createTestEnvironment("py_client");
  const account = await buyer("python-client");
  key = (await apiKey(account.id)).secret;
  const big = Buffer.from(Uint8Array.from({ length: 3 * 1024 * 1024 }, (_, i) => (i * 7 + (i >> 10)) & 0xff));
  const delivered: Record<string, Record<string, string>> = {};
  const ids: string[] = [];
  for (const [name, files] of [
    ["first", { "a.csv": Buffer.from("a,b\n1,2\n"), "b.jsonl": Buffer.from('{"x":1}\n') }],
    ["second", { "big.bin": big }],
    ["third", { "c.csv": Buffer.from("c\n") }],
  ] as const) {
    const created = await order(account.id, { name, files });
    ids.push(created.id);
    delivered[created.id] = Object.fromEntries(Object.entries(files).map(([file, data]) => [file, sha256(data)]));
  }
  const refunded = await order(account.id, {
    name: "refunded",
    status: "refunded",
    files: { "r.csv": Buffer.from("r\n") },
  });
  const unfinished = await order(account.id, { name: "unfinished", status: "unfinished" });
  ids.push(refunded.id, unfinished.id);
  expectations = {
    order_ids: ids,
    delivered,
    big: [Object.keys(delivered)[1], "big.bin"],
    refunded_id: refunded.id,
  };
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    env: { REDIS_URL: "", RATE_LIMIT_EXEMPT_BUYERS: account.id },
  });
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
});

it("is served by the server for download, as the getting-started page says", async () => {
  const answer = await fetch(`${server.url}/clients/dataset_access.py`);
  expect(answer.status).toBe(200);
  expect(answer.headers.get("content-disposition")).toBe('attachment; filename="dataset_access.py"');
  expect(await answer.text()).toBe(await fs.readFile(path.resolve("clients/python/dataset_access.py"), "utf8"));
});

it("passes its unittest suite against the server", { timeout: 180_000 }, async () => {
  const run = await promisify(execFile)("python3", ["-m", "unittest", "-v", "test_dataset_access"], {
    cwd: path.resolve("clients/python"),
    env: {
      ...process.env,
      DATASET_ACCESS_URL: server.url,
      DATASET_ACCESS_KEY: key,
      DATASET_ACCESS_TEST_EXPECT: JSON.stringify(expectations),
    },
  }).catch((error: { stdout: string; stderr: string }) => ({ ...error, failed: true }));
  const output = `${run.stdout}\n${run.stderr}`;
  expect("failed" in run, output).toBe(false);
  // Every test ran (none skipped for want of a server).
  expect(output).toMatch(/Ran 9 tests/);
  expect(output).not.toMatch(/skipped/);
});
