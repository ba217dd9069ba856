import { execFile } from "node:child_process";
import path from "node:path";
import { Readable } from "node:stream";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../../clients/typescript/src/client";
import type { DataContract } from "../../clients/typescript/src/contract";
import { DatasetAccessError } from "../../clients/typescript/src/errors";
import { describeTable, setCadence } from "../../lib/tables/dictionary";
import { processPendingNow } from "../../lib/tables/pipeline";
import { publishTable } from "../../lib/tables/publish";
import { tableChecks } from "../../lib/tables/quality-admin";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { odcsCheck } from "../helpers/odcs";
import { startServer, type TestServer } from "../helpers/server";
import { buildTypeScriptClient, runCli, runCliOnTerminal, type CliRun } from "./cli";

/**
 * A table's data contract (contract Part 9) through both clients against the production server on
 * a real PostgreSQL: a table keyed by sku, described, with checks and a daily cadence. The
 * libraries answer the server's YAML unchanged and its JSON document (valid ODCS v3.1.0, naming
 * the key, a description, a threshold and the frequency); both commands print the same bytes.
 */
let env: TestEnvironment;
let server: TestServer;
let key: string;
let orderId: string;
let checkOdcs: (document: unknown) => void;
const served = { yaml: "", json: "" };

const PYTHON_CLIENT = path.resolve("clients/python");
const cliEnv = () => ({ DATASET_ACCESS_URL: server.url, DATASET_ACCESS_KEY: key });
const client = () => createClient({ baseUrl: server.url, apiKey: key });

/** The server's own answer, read without a client. */
async function contractBody(accept: string): Promise<string> {
  const response = await fetch(`${server.url}/api/v1/orders/${orderId}/tables/products/contract`, {
    headers: { Authorization: `Bearer ${key}`, Accept: accept },
  });
  expect(response.status).toBe(200);
  return response.text();
}

beforeAll(async () => {
  env = await createTestEnvironment("contract_client");
  checkOdcs = await odcsCheck();
  const account = await buyer("contract-client");
  key = (await apiKey(account.id)).secret;
  orderId = (await order(account.id, { name: "products" })).id;
  const csv = "sku,title,price_eur\nA1,Mug,9.5\nB2,Bowl,12\n";
  await publishTable({
    orderId,
    table: "products",
    key: ["sku"],
    parts: [{ name: "products.csv", source: { stream: Readable.from([Buffer.from(csv)]) } }],
  });
  await processPendingNow();
  await describeTable(orderId, "products", {
    description: "Products of the shop, one row per SKU.",
    columns: [
      { name: "sku", description: "The shop's stock-keeping unit.", example: "A1" },
      // A bidi override: printed raw on a terminal, it would reorder what follows it.
      { name: "title", description: "The name on the shelf \u202eflipped." },
      { name: "price_eur", description: "Price, VAT included.", unit: "EUR" },
    ],
  });
  await tableChecks(orderId, "products", ["row_count_drop=0.3"]);
  await setCadence(orderId, "products", { every: "1d" });
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    env: { REDIS_URL: "", JOBS_WORKER: "off", RATE_LIMIT_EXEMPT_BUYERS: account.id },
  });
  await buildTypeScriptClient();
  served.yaml = await contractBody("application/yaml");
  served.json = await contractBody("application/json");
}, 300_000);

afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
});

/** What the contract must promise: valid ODCS naming the key, a description, a threshold and the frequency. */
function expectPromises(document: unknown): void {
  checkOdcs(document);
  const contract = document as DataContract;
  const [table] = contract.schema;
  expect(contract.description.purpose).toBe("Products of the shop, one row per SKU.");
  expect(table!.properties.find((property) => property.name === "sku")).toMatchObject({
    primaryKey: true,
    primaryKeyPosition: 1,
    description: "The shop's stock-keeping unit.",
  });
  expect(table!.quality.find((rule) => rule.name === "row_count_drop")!.implementation.threshold).toBe(0.3);
  expect(contract.slaProperties).toContainEqual({ property: "frequency", value: 1, unit: "d" });
}

/** Runs a Python snippet with dataset_access importable and the server and key in its environment. */
async function python(code: string, args: string[] = []): Promise<CliRun> {
  return promisify(execFile)("python3", ["-c", code, ...args], {
    env: { ...process.env, ...cliEnv(), PYTHONPATH: PYTHON_CLIENT },
  }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: CliRun) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
  );
}

const runPython = (args: string[]) => python("import sys, dataset_access; sys.exit(dataset_access.main())", args);

describe("the libraries", () => {
  it("TypeScript: contractYaml is the server's YAML, contract its JSON document", async () => {
    expect(await client().tables.contractYaml(orderId, "products")).toBe(served.yaml);
    const document = await client().tables.contract(orderId, "products");
    expect(document).toEqual(JSON.parse(served.json));
    expectPromises(document);
  });

  it("TypeScript: an unknown table is a typed refusal", async () => {
    for (const read of [client().tables.contract, client().tables.contractYaml]) {
      const error = await read(orderId, "nothing").catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(DatasetAccessError);
      expect(error).toMatchObject({ status: 404, code: "table_not_found" });
    }
  });

  it("Python: contract() is the YAML text, format='json' the document as a dict", async () => {
    const code = `
import json, sys, dataset_access
client = dataset_access.Client()
order = sys.argv[1]
yaml, document = client.contract(order, "products"), client.contract(order, "products", format="json")
assert isinstance(yaml, str) and isinstance(document, dict)
try:
    client.contract(order, "nothing")
except dataset_access.DatasetAccessError as error:
    missing = [error.status, error.code]
try:
    client.contract(order, "products", format="xml")
except ValueError as error:
    refused = str(error)
json.dump({"yaml": yaml, "document": document, "missing": missing, "refused": refused}, sys.stdout)
`;
    const run = await python(code, [orderId]);
    expect(run.code, run.stderr).toBe(0);
    const answer = JSON.parse(run.stdout);
    expect(answer.yaml).toBe(served.yaml);
    expect(answer.document).toEqual(JSON.parse(served.json));
    expectPromises(answer.document);
    expect(answer.missing).toEqual([404, "table_not_found"]);
    expect(answer.refused).toBe('format must be "yaml" or "json", not \'xml\'.');
  });
});

describe("dataset-access contract and python3 dataset_access.py contract", () => {
  const args = () => ["contract", "--order", orderId, "--table", "products"];

  it("print the YAML as served, also off a terminal, the same bytes from both", async () => {
    const [typescript, python] = await Promise.all([runCli(args(), cliEnv()), runPython(args())]);
    expect(typescript.code, typescript.stderr).toBe(0);
    expect(typescript.stdout).toBe(served.yaml);
    expect(python).toEqual(typescript);
  });

  it("print the JSON document with --json as the other commands print JSON, the same bytes from both", async () => {
    const [typescript, python] = await Promise.all([
      runCli([...args(), "--json"], cliEnv()),
      runPython([...args(), "--json"]),
    ]);
    expect(typescript.code, typescript.stderr).toBe(0);
    expect(typescript.stdout).toBe(`${JSON.stringify(JSON.parse(served.json), null, 2)}\n`);
    expectPromises(JSON.parse(typescript.stdout));
    expect(python).toEqual(typescript);
  });

  it("escape the YAML's control characters on a terminal, its lines kept", async () => {
    const pty = "import os, pty, sys; sys.exit(os.waitstatus_to_exitcode(pty.spawn(sys.argv[1:])))";
    const [typescript, python] = await Promise.all([
      runCliOnTerminal(args(), cliEnv()),
      promisify(execFile)("python3", ["-c", pty, "python3", path.join(PYTHON_CLIENT, "dataset_access.py"), ...args()], {
        env: { ...process.env, ...cliEnv() },
      }),
    ]);
    expect(typescript.code).toBe(0);
    expect(served.yaml).toContain("\u202e");
    expect(typescript.stdout.replaceAll("\r\n", "\n")).toBe(served.yaml.replace("\u202e", "\\u202e"));
    expect(python.stdout).toBe(typescript.stdout);
  });

  it("exit 3 with the API's code when the table does not exist, the same from both", async () => {
    const missing = ["contract", "--order", orderId, "--table", "nothing"];
    const [typescript, python] = await Promise.all([runCli(missing, cliEnv()), runPython(missing)]);
    expect(typescript.code).toBe(3);
    expect(typescript.stderr).toMatch(/^The API refused: table_not_found: /);
    const withoutRequest = (stderr: string) => stderr.replace(/ \(request [\w-]+\)/, "");
    expect(withoutRequest(python.stderr)).toBe(withoutRequest(typescript.stderr));
    expect(python.code).toBe(3);
  });
});
