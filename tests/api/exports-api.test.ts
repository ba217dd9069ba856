import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDestination } from "../../lib/exports/destinations";
import { exportNow } from "../../lib/exports/run-now";
import { closeJobQueue } from "../../lib/queue";
import { exportRunPageSchema, exportRunSchema } from "../../lib/schemas/exports";
import { OPERATOR } from "../../lib/security/log";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { expectProblem } from "../helpers/problem";
import { startServer, TEST_AUTH_SECRET, type TestServer } from "../helpers/server";

/**
 * Export runs over HTTP (contract Part 5): GET /api/v1/exports pages a buyer's runs newest first,
 * GET /api/v1/exports/{id} reads one; another buyer's run is 404 export_not_found. No worker runs
 * (JOBS_WORKER=off), so the runs stay as Export now made them.
 */

let env: TestEnvironment;
let server: TestServer;
let keyA: string;
let keyB: string;
let runIds: string[];

beforeAll(async () => {
  env = await createTestEnvironment("api_exports");
  const secretsKey = randomBytes(32).toString("base64");
  Object.assign(process.env, { AUTH_SECRET: TEST_AUTH_SECRET, EXPORT_SECRETS_KEY: secretsKey });
  const a = await buyer("exports-a");
  const b = await buyer("exports-b");
  const delivered = await order(a.id, { name: "exported" });
  runIds = [];
  // One destination per run: Export now makes one pending run per destination.
  for (let i = 0; i < 3; i++) {
    const { id: destinationId } = await createDestination(
      a.id,
      {
        name: `lake ${i}`,
        type: "s3",
        fields: { bucket: "lake", region: "us-east-1", access_key_id: "AKIA0000", secret_access_key: "secret" },
      },
      OPERATOR,
    );
    const [run] = await exportNow({ orderId: delivered.id, destinationId });
    runIds.push(run!.id);
  }
  keyA = (await apiKey(a.id)).secret;
  keyB = (await apiKey(b.id)).secret;
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    env: { REDIS_URL: "", JOBS_WORKER: "off", EXPORT_SECRETS_KEY: secretsKey },
  });
}, 180_000);

afterAll(async () => {
  await closeJobQueue();
  await server?.stop();
  await env?.cleanup();
});

function api(path: string, key = keyA) {
  return fetch(`${server.url}/api/v1${path}`, { headers: { Authorization: `Bearer ${key}` } });
}

describe("export runs", () => {
  it("list newest first, page by page, with the contract's fields", async () => {
    const all = exportRunPageSchema.parse(await (await api("/exports")).json());
    expect(all.data.map((run) => run.id)).toEqual([...runIds].reverse());
    expect(all.next_offset).toBeNull();
    const first = exportRunPageSchema.parse(await (await api("/exports?limit=2")).json());
    expect(first.next_offset).toBe(2);
    const second = exportRunPageSchema.parse(await (await api("/exports?limit=2&offset=2")).json());
    expect([...first.data, ...second.data]).toEqual(all.data);
    expect(second.next_offset).toBeNull();
    for (const query of ["limit=0", "limit=51", "offset=x"]) {
      await expectProblem(await api(`/exports?${query}`), 400, "invalid_request");
    }
  });

  it("read one run; another buyer's or an unknown one is export_not_found", async () => {
    const response = await api(`/exports/${runIds[0]}`);
    expect(response.status).toBe(200);
    expect(response.headers.get("cache-control")).toBe("private, no-store");
    const run = exportRunSchema.strict().parse(await response.json());
    expect(run).toMatchObject({ id: runIds[0], trigger: "manual", state: "pending", destination: { type: "s3" } });
    for (const id of [runIds[0], "exr_00000000000000000000000000000000", "nope"]) {
      await expectProblem(await api(`/exports/${id}`, keyB), 404, "export_not_found");
    }
    expect(exportRunPageSchema.parse(await (await api("/exports", keyB)).json())).toEqual({
      data: [],
      next_offset: null,
    });
  });
});
