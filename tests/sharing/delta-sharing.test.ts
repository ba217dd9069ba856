import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { GetObjectCommand } from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { DuckDBInstance } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { makeRendition } from "../../lib/datasets/renditions";
import { signDownloadToken, verifyDownloadToken } from "../../lib/downloads/token";
import { replaceApiKey, revokeApiKey } from "../../lib/keys";
import { setOrderStatus } from "../../lib/operator/orders";
import { describeTable } from "../../lib/tables/dictionary";
import { enableSocialAccess } from "../../lib/social/admin";
import { s3Client } from "../../lib/storage/s3";
import { datasetJobsDone, goodFiles, PRODUCT_ROWS } from "../datasets/helpers";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startOfAFixedWindow } from "../helpers/rate-limit";
import { startServer, TEST_AUTH_SECRET, type TestServer } from "../helpers/server";
import { waitFor } from "../helpers/wait";

/**
 * The Delta Sharing server (PROTOCOL.md of delta-io/delta-sharing; Part 3 of the contract) on the
 * production server and its job worker, with the storage driver the run uses (STORAGE_DRIVER=s3:
 * the tests' S3 store): every endpoint, its errors in the protocol's shape, the key rules and the
 * shared rate limit, and what a client does: list, metadata, query, fetch each file, read it.
 */

type TableItem = { name: string; schema: string; share: string; id: string; comment?: string };
type FileLine = {
  url: string;
  id: string;
  partitionValues: Record<string, string>;
  size: number;
  stats: string;
  expirationTimestamp: number;
};
type SchemaField = { name: string; type: unknown; nullable: boolean; metadata: object };

let env: TestEnvironment;
let server: TestServer;
let workDir: string;
let duckdb: DuckDBInstance;
let buyerId: string;
let key: string;
let otherKey: string;
type OrderFiles = { id: string; files: { id: string; name: string; table: string | null }[] };
let mainOrder: OrderFiles;
let typedOrder: OrderFiles;
let refundedLaterId: string;
let unfinishedId: string;
let otherOrderId: string;
let otherTable: string;

/** Rows of the typed order's files: odd DuckDB types that Spark does not have. */
const TYPED_CSV = "id,at,big\n1,08:30:00,18446744073709551615\n2,17:05:10,1\n";
const TYPED_JSONL =
  [
    { id: 1, tags: ["a", "b"], dims: { w: 1.5, h: 2 }, seen: "2026-11-01T10:00:00.123456789Z" },
    { id: 2, tags: [], dims: { w: 0.5, h: 1 }, seen: "2026-11-02T10:00:00Z" },
  ]
    .map((row) => JSON.stringify(row))
    .join("\n") + "\n";

/** A Parquet file of DuckDB types Spark lacks, as a seller's pipeline can write them. */
async function typedParquet(): Promise<Buffer> {
  const file = path.join(workDir, "typed-source.parquet");
  const connection = await duckdb.connect();
  try {
    await connection.run(
      `COPY (SELECT * FROM (VALUES
         (1::UTINYINT, 18446744073709551615::UBIGINT, TIME '08:30:00', TIMESTAMP_NS '2026-11-01 10:00:00.123456789',
          INTERVAL 1 DAY, uuid(), [1, 2]::UINTEGER[], {'a': 1::USMALLINT}),
         (2::UTINYINT, 1::UBIGINT, TIME '17:05:10', TIMESTAMP_NS '2026-11-02 10:00:00',
          INTERVAL 2 HOUR, uuid(), []::UINTEGER[], {'a': 2::USMALLINT})
       ) AS t(u8, big, at_time, ns, iv, uid, li, st)) TO '${file}' (FORMAT parquet)`,
    );
  } finally {
    connection.closeSync();
  }
  return fs.readFile(file);
}

beforeAll(async () => {
  env = await createTestEnvironment("sharing");
  workDir = await fs.mkdtemp(path.join(os.tmpdir(), "sharing-"));
  duckdb = await DuckDBInstance.create(":memory:");
  const account = await buyer("sharing");
  buyerId = account.id;
  mainOrder = await order(buyerId, {
    name: "Products, every format",
    files: { ...(await goodFiles(workDir)), "archive.bin": Buffer.from([0, 1, 2, 3]) },
  });
  typedOrder = await order(buyerId, {
    name: "Typed",
    files: {
      "typed.csv": Buffer.from(TYPED_CSV),
      "nested.jsonl": Buffer.from(TYPED_JSONL),
      "typed.parquet": await typedParquet(),
    },
  });
  refundedLaterId = (await order(buyerId, { name: "Refunded later", files: { "r.csv": Buffer.from("a\n1\n") } })).id;
  unfinishedId = (
    await order(buyerId, { name: "Unfinished", status: "unfinished", files: { "u.csv": Buffer.from("a\n1\n") } })
  ).id;
  key = (await apiKey(buyerId)).secret;
  const other = await buyer("sharing-other");
  const otherOrder = await order(other.id, { name: "Other's", files: { "o.csv": Buffer.from("a\n1\n") } });
  otherOrderId = otherOrder.id;
  otherTable = otherOrder.files[0]!.table!;
  otherKey = (await apiKey(other.id)).secret;
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    env: {
      REDIS_URL: "",
      DATASET_TEMP_DIR: path.join(workDir, "engine"),
      // The limit is tested with its own account; these make many requests.
      RATE_LIMIT_EXEMPT_BUYERS: `${buyerId},${other.id}`,
    },
  });
  // The worker profiles every data file, makes its Parquet rendition, and each file's table its version 1.
  await datasetJobsDone();
  await waitFor(
    async () => (await db().tablePublication.count({ where: { status: { in: ["uploading", "processing"] } } })) === 0,
    240_000,
    "every file's table at version 1",
  );
}, 300_000);

afterAll(async () => {
  await server?.stop();
  duckdb?.closeSync();
  await env?.cleanup();
  if (workDir) await fs.rm(workDir, { recursive: true, force: true });
});

function sharing(
  pathAndQuery: string,
  options: { method?: string; token?: string | null; body?: unknown; headers?: Record<string, string> } = {},
): Promise<Response> {
  const token = options.token === undefined ? key : options.token;
  return fetch(`${server.url}/api/delta-sharing${pathAndQuery}`, {
    method: options.method ?? (options.body === undefined ? "GET" : "POST"),
    headers: {
      ...(token === null ? {} : { Authorization: `Bearer ${token}` }),
      ...(options.body === undefined ? {} : { "Content-Type": "application/json" }),
      ...options.headers,
    },
    body:
      options.body === undefined
        ? undefined
        : typeof options.body === "string"
          ? options.body
          : JSON.stringify(options.body),
  });
}

async function json<T>(response: Response): Promise<T> {
  expect(response.status, await response.clone().text()).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  return (await response.json()) as T;
}

async function ndjson(response: Response): Promise<Record<string, unknown>[]> {
  expect(response.status, await response.clone().text()).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^application\/x-ndjson/);
  const text = await response.text();
  expect(text.endsWith("\n")).toBe(true);
  return text
    .slice(0, -1)
    .split("\n")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** The protocol's error: exactly `{errorCode, message}`, never problem+json. */
async function expectSharingError(response: Response, status: number, errorCode: string): Promise<string> {
  const text = await response.text();
  expect(response.status, text).toBe(status);
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  const body = JSON.parse(text) as Record<string, unknown>;
  expect(Object.keys(body).sort()).toEqual(["errorCode", "message"]);
  expect(body.errorCode).toBe(errorCode);
  expect(body.message).toMatch(/\S/);
  return body.message as string;
}

const tablePath = (orderId: string, table: string) => `/shares/orders/schemas/${orderId}/tables/${table}`;

async function allPages<T>(pathAndQuery: string, maxResults: number, token = key): Promise<T[]> {
  const items: T[] = [];
  let pageToken: string | undefined;
  for (let pages = 0; pages < 100; pages++) {
    const separator = pathAndQuery.includes("?") ? "&" : "?";
    const query = `${separator}maxResults=${maxResults}${pageToken ? `&pageToken=${encodeURIComponent(pageToken)}` : ""}`;
    const page = await json<{ items?: T[]; nextPageToken?: string }>(
      await sharing(`${pathAndQuery}${query}`, { token }),
    );
    expect((page.items ?? []).length).toBeLessThanOrEqual(maxResults);
    items.push(...(page.items ?? []));
    if (!page.nextPageToken) return items;
    pageToken = page.nextPageToken;
  }
  throw new Error("More than 100 pages");
}

async function query(orderId: string, table: string, body: unknown = {}, headers: Record<string, string> = {}) {
  const response = await sharing(`${tablePath(orderId, table)}/query`, { body, headers });
  const version = response.headers.get("delta-table-version");
  const lines = await ndjson(response);
  return { lines, version, headers: response.headers };
}

/** The order as /api/v1 sees it: each file's `rows` is what numRecords must say. */
async function apiOrder(orderId: string) {
  const response = await fetch(`${server.url}/api/v1/orders/${orderId}`, {
    headers: { Authorization: `Bearer ${key}` },
  });
  expect(response.status).toBe(200);
  return (await response.json()) as {
    files: {
      id: string;
      name: string;
      format: string;
      rows: number | null;
      profile_status: string;
      table: { name: string; version: number | null } | null;
    }[];
  };
}

/** Reads a fetched Parquet file with DuckDB: its columns with their types, and its row count. */
async function readParquet(bytes: Buffer): Promise<{ columns: { name: string; type: string }[]; rows: number }> {
  const file = path.join(workDir, `fetched-${Date.now()}-${Math.random().toString(36).slice(2)}.parquet`);
  await fs.writeFile(file, bytes);
  const connection = await duckdb.connect();
  try {
    const described = await connection.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${file}')`);
    const counted = await connection.runAndReadAll(`SELECT count(*)::INTEGER FROM read_parquet('${file}')`);
    return {
      columns: described
        .getRowObjects()
        .map((row) => ({ name: String(row.column_name), type: String(row.column_type) })),
      rows: Number(counted.getRows()[0]![0]),
    };
  } finally {
    connection.closeSync();
    await fs.rm(file, { force: true });
  }
}

/** What a client does with one file line: fetch the URL, check the size, read it with the advertised schema. */
async function fetchAndRead(line: FileLine, schemaString: string) {
  const response = await fetch(line.url);
  expect(response.status).toBe(200);
  const bytes = Buffer.from(await response.arrayBuffer());
  expect(bytes.length).toBe(line.size);
  const parquet = await readParquet(bytes);
  const advertised = (JSON.parse(schemaString) as { fields: SchemaField[] }).fields;
  expect(parquet.columns.map((column) => column.name)).toEqual(advertised.map((field) => field.name));
  // Each column is stored as exactly the type advertised: nothing a Spark reader would have to cast.
  parquet.columns.forEach((column, index) => {
    expect(column.type).toMatch(new RegExp(`^${duckTypePattern(advertised[index]!.type)}$`));
  });
  expect(parquet.rows).toBe((JSON.parse(line.stats) as { numRecords: number }).numRecords);
  return parquet;
}

/**
 * The DuckDB type a Parquet column of the advertised Spark type reads back as, as a pattern: the
 * protocol's types mapped by hand here, independently of lib/engine/spark-schema.ts.
 */
function duckTypePattern(type: unknown): string {
  const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const primitives: Record<string, string> = {
    boolean: "BOOLEAN",
    byte: "TINYINT",
    short: "SMALLINT",
    integer: "INTEGER",
    long: "BIGINT",
    float: "FLOAT",
    double: "DOUBLE",
    string: "VARCHAR",
    binary: "BLOB",
    date: "DATE",
    timestamp: "TIMESTAMP(?: WITH TIME ZONE)?",
  };
  if (typeof type === "string") {
    const decimal = /^decimal\((\d+),(\d+)\)$/.exec(type);
    if (decimal) return escape(`DECIMAL(${decimal[1]},${decimal[2]})`);
    const primitive = primitives[type];
    if (!primitive) throw new Error(`Not a Delta Sharing type: ${type}`);
    return primitive;
  }
  const nested = type as {
    type: string;
    elementType?: unknown;
    keyType?: unknown;
    valueType?: unknown;
    fields?: SchemaField[];
  };
  if (nested.type === "array") return `${duckTypePattern(nested.elementType)}\\[\\]`;
  if (nested.type === "map") return `MAP\\(${duckTypePattern(nested.keyType)}, ${duckTypePattern(nested.valueType)}\\)`;
  if (nested.type === "struct") {
    const fields = nested.fields!.map((field) => `"?${escape(field.name)}"? ${duckTypePattern(field.type)}`);
    return `STRUCT\\(${fields.join(", ")}\\)`;
  }
  throw new Error(`Not a Delta Sharing type: ${JSON.stringify(type)}`);
}

describe("shares and schemas", () => {
  it("lists one share, orders, and gets it by name (case-insensitive)", async () => {
    const shares = await json<{ items: { name: string }[]; nextPageToken?: string }>(await sharing("/shares"));
    expect(shares.items.map((share) => share.name)).toEqual(["orders"]);
    expect(shares.nextPageToken).toBeUndefined();
    expect(await json(await sharing("/shares/orders"))).toMatchObject({ share: { name: "orders" } });
    expect(await json(await sharing("/shares/ORDERS"))).toMatchObject({ share: { name: "orders" } });
    // maxResults=0: no items, and no token (one at the same place would be asked for again forever).
    const none = await json<{ items?: unknown[]; nextPageToken?: string }>(await sharing("/shares?maxResults=0"));
    expect(none.items ?? []).toEqual([]);
    expect(none.nextPageToken).toBeUndefined();
  });

  it("lists one schema per delivered order, named by its id, its name as the comment; not unfinished or another's", async () => {
    const schemas = await allPages<{ name: string; share: string; comment: string }>("/shares/orders/schemas", 1);
    expect(schemas.map((schema) => schema.name).sort()).toEqual([mainOrder.id, typedOrder.id, refundedLaterId].sort());
    expect(schemas.find((schema) => schema.name === mainOrder.id)).toEqual({
      name: mainOrder.id,
      share: "orders",
      comment: "Products, every format",
    });
  });

  it("lists the tables of a schema: one per table of the order with a version, named by its name", async () => {
    const expected = mainOrder.files.filter((file) => file.name !== "archive.bin");
    for (const maxResults of [1, 2, 500]) {
      const tables = await allPages<TableItem>(`/shares/orders/schemas/${mainOrder.id}/tables`, maxResults);
      expect(tables.map((table) => table.name).sort()).toEqual(expected.map((file) => file.table).sort());
    }
    const [first] = await allPages<TableItem>(`/shares/orders/schemas/${mainOrder.id}/tables`, 500);
    const row = await db().orderTable.findFirstOrThrow({ where: { orderId: mainOrder.id, name: first!.name } });
    expect(first).toEqual({
      name: row.name,
      schema: mainOrder.id,
      share: "orders",
      id: row.id,
      accessModes: ["url"],
    });
  });

  it("lists all tables of the share across schemas, paged without repeats or gaps", async () => {
    const all = await allPages<TableItem>("/shares/orders/all-tables", 2);
    const names = all.map((table) => `${table.schema}.${table.name}`);
    expect(new Set(names).size).toBe(names.length);
    const expected = [
      ...mainOrder.files.filter((file) => file.name !== "archive.bin").map((file) => `${mainOrder.id}.${file.table}`),
      ...typedOrder.files.map((file) => `${typedOrder.id}.${file.table}`),
      `${refundedLaterId}.r`,
    ];
    expect(names.sort()).toEqual(expected.sort());
  });

  it.each([
    ["maxResults not a number", "/shares/orders/schemas?maxResults=ten", 400, "INVALID_PARAMETER_VALUE"],
    ["maxResults over 1,000", "/shares/orders/all-tables?maxResults=1001", 400, "INVALID_PARAMETER_VALUE"],
    ["a negative maxResults", "/shares?maxResults=-1", 400, "INVALID_PARAMETER_VALUE"],
    ["a forged page token", "/shares/orders/schemas?pageToken=bm90LWEtdG9rZW4", 400, "INVALID_PARAMETER_VALUE"],
    [
      "another list's page token",
      "/shares/orders/all-tables?pageToken=" + tokenFor("schemas"),
      400,
      "INVALID_PARAMETER_VALUE",
    ],
    [
      "a page token whose position is not an id (a NUL)",
      "/shares/orders/schemas?pageToken=" + forgedToken({ list: "schemas", order: "\u0000", table: "" }),
      400,
      "INVALID_PARAMETER_VALUE",
    ],
    [
      "a page token whose table position is not a table name",
      "/shares/orders/all-tables?pageToken=" + forgedToken({ list: "all-tables", order: "", table: "t' OR 1=1" }),
      400,
      "INVALID_PARAMETER_VALUE",
    ],
    ["an unknown share", "/shares/other", 404, "RESOURCE_DOES_NOT_EXIST"],
    ["an unknown share's schemas", "/shares/other/schemas", 404, "RESOURCE_DOES_NOT_EXIST"],
    ["a schema that is not an order id", "/shares/orders/schemas/default/tables", 404, "RESOURCE_DOES_NOT_EXIST"],
    ["a path that is no endpoint", "/shares/orders/nothing-here", 404, "RESOURCE_DOES_NOT_EXIST"],
    ["a bad percent-encoding", "/shares/%E0%A4%A", 400, "MALFORMED_REQUEST"],
  ])("answers %s (%s) with %i %s", async (_case, pathAndQuery, status, errorCode) => {
    await expectSharingError(await sharing(pathAndQuery), status, errorCode);
  });

  it("answers a method a path does not take with 405 and Allow, in the protocol's shape", async () => {
    const response = await sharing("/shares", { method: "PUT" });
    expect(response.headers.get("allow")).toBe("GET, HEAD");
    await expectSharingError(response, 405, "MALFORMED_REQUEST");
    const query = await sharing(`${tablePath(mainOrder.id, mainOrder.files[0]!.table!)}/query`);
    expect(query.headers.get("allow")).toBe("POST");
    await expectSharingError(query, 405, "MALFORMED_REQUEST");
  });
});

/** A page token as a client could forge one: base64url JSON of any positions. */
function forgedToken(position: Record<string, string>): string {
  return Buffer.from(JSON.stringify(position)).toString("base64url");
}

function tokenFor(list: string): string {
  return Buffer.from(JSON.stringify({ list, order: "", table: "" })).toString("base64url");
}

describe("one table", () => {
  const csvFile = () => mainOrder.files.find((file) => file.name === "products.csv")!;

  it("answers its version on GET .../version and HEAD on the table, in Delta-Table-Version", async () => {
    const table = tablePath(mainOrder.id, csvFile().table!);
    const get = await sharing(`${table}/version`);
    expect(get.status).toBe(200);
    expect(get.headers.get("delta-table-version")).toMatch(/^\d+$/);
    const head = await sharing(table, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("delta-table-version")).toBe(get.headers.get("delta-table-version"));
    expect(await head.text()).toBe("");
    // Case-insensitive names.
    const upper = await sharing(`${tablePath(mainOrder.id.toUpperCase(), csvFile().table!.toUpperCase())}/version`);
    expect(upper.headers.get("delta-table-version")).toBe(get.headers.get("delta-table-version"));
  });

  it("answers metadata: a protocol line and a metaData line with the Spark schema, name and description", async () => {
    const file = csvFile();
    const response = await sharing(`${tablePath(mainOrder.id, file.table!)}/metadata`);
    expect(response.headers.get("delta-table-version")).toMatch(/^\d+$/);
    expect(response.headers.get("delta-sharing-capabilities")).toBe("responseformat=parquet");
    const [protocol, metadata, ...rest] = await ndjson(response);
    expect(rest).toEqual([]);
    expect(protocol).toEqual({ protocol: { minReaderVersion: 1 } });
    const metaData = (metadata as { metaData: Record<string, unknown> }).metaData;
    const row = await db().orderTable.findFirstOrThrow({ where: { orderId: mainOrder.id, name: file.table! } });
    expect(metaData).toMatchObject({
      id: row.id,
      name: file.table,
      format: { provider: "parquet" },
      partitionColumns: [],
      configuration: { enableChangeDataFeed: "true" },
      numFiles: 1,
    });
    expect(metaData.version).toBeUndefined();
    const schema = JSON.parse(metaData.schemaString as string) as { type: string; fields: SchemaField[] };
    expect(schema.type).toBe("struct");
    expect(schema.fields.map((field) => [field.name, field.type])).toEqual([
      ["id", "long"],
      ["name", "string"],
      ["price", "double"],
      ["listed_at", "timestamp"],
      ["note", "string"],
    ]);
  });

  it("carries the data dictionary: the table's description, each described column's metadata.comment", async () => {
    const file = csvFile();
    await describeTable(mainOrder.id, file.table!, {
      description: "Products as the shop lists them.",
      columns: [{ name: "price", description: "Price in euros.", unit: "EUR" }],
    });
    const [, metadata] = await ndjson(await sharing(`${tablePath(mainOrder.id, file.table!)}/metadata`));
    const metaData = (metadata as { metaData: { description: string; schemaString: string } }).metaData;
    expect(metaData.description).toBe("Products as the shop lists them.");
    const fields = (JSON.parse(metaData.schemaString) as { fields: SchemaField[] }).fields;
    expect(fields.map((field) => [field.name, field.metadata])).toEqual([
      ["id", {}],
      ["name", {}],
      ["price", { comment: "Price in euros." }],
      ["listed_at", {}],
      ["note", {}],
    ]);
  });

  it("answers a query with protocol, metaData and one file line whose URL is a Parquet file DuckDB reads as advertised", async () => {
    const rowsById = new Map((await apiOrder(mainOrder.id)).files.map((file) => [file.id, file.rows]));
    expect(rowsById.size).toBeGreaterThan(0);
    for (const file of mainOrder.files.filter((candidate) => candidate.name !== "archive.bin")) {
      const { lines, version } = await query(mainOrder.id, file.table!);
      expect(version).toMatch(/^\d+$/);
      expect(lines).toHaveLength(3);
      const metaData = (lines[1] as { metaData: { schemaString: string; size: number } }).metaData;
      const line = (lines[2] as { file: FileLine }).file;
      expect(Object.keys(line).sort()).toEqual([
        "expirationTimestamp",
        "id",
        "partitionValues",
        "size",
        "stats",
        "url",
      ]);
      expect(line.partitionValues).toEqual({});
      expect(line.id).toMatch(/^[0-9a-f]{64}$/);
      expect(metaData.size).toBe(line.size);
      expect(line.expirationTimestamp).toBeGreaterThan(Date.now() + 240_000);
      expect(line.expirationTimestamp).toBeLessThanOrEqual(Date.now() + 300_000);
      const parquet = await fetchAndRead(line, metaData.schemaString);
      expect(parquet.rows).toBe(PRODUCT_ROWS);
      expect(parquet.rows).toBe(rowsById.get(file.id));
      // The same bytes keep the same id.
      expect(((await query(mainOrder.id, file.table!)).lines[2] as { file: FileLine }).file.id).toBe(line.id);
    }
  });

  it("writes types Spark lacks as ones it has (TIME, INTERVAL and UUID as text, unsigned integers widened, nanoseconds as timestamp, inside lists and structs too)", async () => {
    for (const file of typedOrder.files) {
      const { lines } = await query(typedOrder.id, file.table!);
      const metaData = (lines[1] as { metaData: { schemaString: string } }).metaData;
      const parquet = await fetchAndRead((lines[2] as { file: FileLine }).file, metaData.schemaString);
      expect(parquet.rows).toBe(2);
      expect(JSON.parse((lines[2] as { file: FileLine }).file.stats)).toMatchObject({ numRecords: 2 });
      const types = Object.fromEntries(
        (JSON.parse(metaData.schemaString) as { fields: SchemaField[] }).fields.map((field) => [
          field.name,
          field.type,
        ]),
      );
      if (file.name === "typed.csv") {
        expect(types).toMatchObject({ id: "long", at: "string" });
      } else if (file.name === "typed.parquet") {
        expect(types).toEqual({
          u8: "short",
          big: "decimal(20,0)",
          at_time: "string",
          ns: "timestamp",
          iv: "string",
          uid: "string",
          li: { type: "array", elementType: "long", containsNull: true },
          st: {
            type: "struct",
            fields: [{ name: "a", type: "integer", nullable: true, metadata: {} }],
          },
        });
      } else {
        expect(types).toMatchObject({
          id: "long",
          tags: { type: "array", elementType: "string", containsNull: true },
          dims: { type: "struct" },
        });
      }
    }
  });

  it("answers limitHint 0 without a file line, and ignores hints it does not use", async () => {
    const file = csvFile();
    expect((await query(mainOrder.id, file.table!, { limitHint: 0 })).lines).toHaveLength(2);
    const hinted = await query(mainOrder.id, file.table!, {
      limitHint: 5,
      predicateHints: ["id > 3"],
      jsonPredicateHints: '{"op":"isNull","children":[{"op":"column","name":"no_such_column","valueType":"string"}]}',
      somethingNew: true,
    });
    expect(hinted.lines).toHaveLength(3);
  });

  it("answers in the parquet format: a request for delta only is refused, delta,parquet is served as parquet", async () => {
    const file = csvFile();
    const table = tablePath(mainOrder.id, file.table!);
    const message = await expectSharingError(
      await sharing(`${table}/query`, { body: {}, headers: { "delta-sharing-capabilities": "responseformat=delta" } }),
      400,
      "UNSUPPORTED_OPERATION",
    );
    expect(message).toMatch(/parquet/);
    await expectSharingError(
      await sharing(`${table}/metadata`, { headers: { "delta-sharing-capabilities": "responseFormat=DELTA" } }),
      400,
      "UNSUPPORTED_OPERATION",
    );
    const both = await query(
      mainOrder.id,
      file.table!,
      {},
      {
        "delta-sharing-capabilities": "responseformat=delta,parquet;readerfeatures=deletionvectors",
      },
    );
    expect(both.headers.get("delta-sharing-capabilities")).toBe("responseformat=parquet");
    expect(both.lines).toHaveLength(3);
  });

  it.each([
    ["startingVersion 0 (versions start at 1)", { startingVersion: 0 }, 400, "INVALID_PARAMETER_VALUE"],
    ["a timestamp before the first version", { timestamp: "2020-11-01T00:00:00Z" }, 400, "INVALID_PARAMETER_VALUE"],
    ["a timestamp without a zone", { timestamp: "2026-11-01 00:00:00" }, 400, "INVALID_PARAMETER_VALUE"],
    ["a version past the current one", { version: 999 }, 400, "INVALID_PARAMETER_VALUE"],
    ["a negative version", { version: -1 }, 400, "INVALID_PARAMETER_VALUE"],
    ["version and startingVersion", { version: 1, startingVersion: 1 }, 400, "INVALID_PARAMETER_VALUE"],
    ["a limitHint that is not a number", { limitHint: "ten" }, 400, "INVALID_PARAMETER_VALUE"],
    ["a body that is not JSON", "{not json", 400, "MALFORMED_REQUEST"],
    ["a body that is a JSON array", "[]", 400, "MALFORMED_REQUEST"],
  ])("refuses a query with %s (%j): %i %s", async (_case, body, status, errorCode) => {
    const file = csvFile();
    await expectSharingError(
      await sharing(`${tablePath(mainOrder.id, file.table!)}/query`, { body }),
      status,
      errorCode,
    );
  });

  it("signs each file URL for exactly as long as expirationTimestamp says; an expired URL is refused", async () => {
    const file = csvFile();
    const line = ((await query(mainOrder.id, file.table!)).lines[2] as { file: FileLine }).file;
    const url = new URL(line.url);
    // The run's driver decides which kind of link this is.
    expect(url.searchParams.has("X-Amz-Signature")).toBe(process.env.STORAGE_DRIVER === "s3");
    if (url.searchParams.has("X-Amz-Signature")) {
      // A presigned GET of the store: its own expiry is X-Amz-Date + X-Amz-Expires.
      const signedAt = Date.parse(
        url.searchParams
          .get("X-Amz-Date")!
          .replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/, "$1-$2-$3T$4:$5:$6Z"),
      );
      const expiresAt = signedAt + Number(url.searchParams.get("X-Amz-Expires")) * 1000;
      expect(Math.abs(expiresAt - line.expirationTimestamp)).toBeLessThan(2000);
      // The same object presigned the same way, ten minutes ago: the store refuses it.
      const [bucket, ...keyParts] = url.pathname.slice(1).split("/");
      const stale = await getSignedUrl(
        await s3Client(),
        new GetObjectCommand({ Bucket: bucket, Key: decodeURIComponent(keyParts.join("/")) }),
        { expiresIn: 300, signingDate: new Date(Date.now() - 600_000) },
      );
      expect((await fetch(stale)).status).toBe(403);
      expect((await fetch(line.url)).status).toBe(200);
    } else {
      // A link signed by the app: its token carries the expiry.
      process.env.AUTH_SECRET = TEST_AUTH_SECRET;
      const token = url.pathname.split("/").at(-1)!;
      const granted = verifyDownloadToken(token);
      expect(Math.abs(granted.expiresAt.getTime() - line.expirationTimestamp)).toBeLessThan(1000);
      expect(() => verifyDownloadToken(token, new Date(line.expirationTimestamp))).toThrow(/expired/);
      const stale = signDownloadToken({ fileId: granted.fileId, expiresAt: new Date(Date.now() - 1000) });
      const refused = await fetch(`${url.origin}${url.pathname.replace(token, stale)}`);
      expect(refused.status).toBe(410);
      expect((await fetch(line.url)).status).toBe(200);
    }
  });

  it("keeps a table's version when its rendition is made anew, and serves the new rendition", async () => {
    const file = mainOrder.files.find((candidate) => candidate.name === "products.tsv")!;
    const table = tablePath(mainOrder.id, file.table!);
    const before = (await sharing(`${table}/version`)).headers.get("delta-table-version");
    expect(await makeRendition(file.id, "parquet")).toBe("ready");
    const { version, lines } = await query(mainOrder.id, file.table!);
    expect(version).toBe(before);
    await fetchAndRead(
      (lines[2] as { file: FileLine }).file,
      (lines[1] as { metaData: { schemaString: string } }).metaData.schemaString,
    );
  });
});

describe("the tenant boundary and the key rules", () => {
  it("answers another buyer's schema and table, and an unfinished order's, with 404 in the protocol's shape", async () => {
    const ownTable = tablePath(mainOrder.id, mainOrder.files[0]!.table!);
    for (const pathAndQuery of [
      `/shares/orders/schemas/${otherOrderId}/tables`,
      `${tablePath(otherOrderId, otherTable)}/version`,
      `${tablePath(otherOrderId, otherTable)}/metadata`,
      `${tablePath(otherOrderId, otherTable)}/changes?startingVersion=1`,
      `/shares/orders/schemas/${unfinishedId}/tables`,
      `${tablePath(unfinishedId, "u")}/metadata`,
      // Another order's table under this buyer's order: a table is only its own schema's.
      `${tablePath(mainOrder.id, "typed")}/version`,
      // A binary file is no table; a name that breaks the rule names nothing.
      `${tablePath(mainOrder.id, "archive")}/version`,
      `${tablePath(mainOrder.id, "fil_x")}/version`,
    ]) {
      await expectSharingError(await sharing(pathAndQuery), 404, "RESOURCE_DOES_NOT_EXIST");
    }
    await expectSharingError(
      await sharing(`${tablePath(otherOrderId, otherTable)}/query`, { body: {} }),
      404,
      "RESOURCE_DOES_NOT_EXIST",
    );
    // The other buyer sees their own order and not this one.
    const theirs = await allPages<{ name: string }>("/shares/orders/schemas", 10, otherKey);
    expect(theirs.map((schema) => schema.name)).toEqual([otherOrderId]);
    await expectSharingError(await sharing(`${ownTable}/version`, { token: otherKey }), 404, "RESOURCE_DOES_NOT_EXIST");
  });

  it("stops sharing an order at the next request after its refund", async () => {
    await query(refundedLaterId, "r");
    await setOrderStatus(refundedLaterId, "refunded");
    await expectSharingError(
      await sharing(`${tablePath(refundedLaterId, "r")}/query`, { body: {} }),
      404,
      "RESOURCE_DOES_NOT_EXIST",
    );
    const schemas = await allPages<{ name: string }>("/shares/orders/schemas", 10);
    expect(schemas.map((schema) => schema.name)).not.toContain(refundedLaterId);
  });

  it.each([
    ["no key", null, 401, "UNAUTHENTICATED"],
    ["a malformed key", "not-a-key", 401, "UNAUTHENTICATED"],
    ["an unknown key", "dak_00000000000000000000000000000000000000", 401, "UNAUTHENTICATED"],
  ])("refuses %s (%j) with %i %s and WWW-Authenticate", async (_case, token, status, errorCode) => {
    const response = await sharing("/shares", { token });
    expect(response.headers.get("www-authenticate")).toMatch(/^Bearer/);
    await expectSharingError(response, status, errorCode);
  });

  it("refuses an expired key, and a scrape:read key with 403", async () => {
    const expired = await apiKey(buyerId, { expiresInDays: 30, createdAt: new Date(Date.now() - 31 * 86_400_000) });
    await expectSharingError(await sharing("/shares", { token: expired.secret }), 401, "UNAUTHENTICATED");
    await enableSocialAccess(buyerId, 100, 100);
    const scrape = await apiKey(buyerId, { permission: "scrape:read" });
    const message = await expectSharingError(
      await sharing("/shares", { token: scrape.secret }),
      403,
      "PERMISSION_DENIED",
    );
    expect(message).toMatch(/datasets:read/);
  });

  it("refuses a revoked key at its very next request", async () => {
    const revoked = await apiKey(buyerId);
    await json(await sharing("/shares/orders/schemas", { token: revoked.secret }));
    await revokeApiKey(revoked.id, { buyerId });
    await expectSharingError(
      await sharing("/shares/orders/schemas", { token: revoked.secret }),
      401,
      "UNAUTHENTICATED",
    );
  });

  it("keeps a replaced key working until its retirement, and refuses it at the first request after", async () => {
    const old = await apiKey(buyerId);
    const replacement = await replaceApiKey({ buyerId, keyId: old.id, expiresInDays: 30, overlap: "1h" });
    await json(await sharing("/shares", { token: old.secret }));
    await json(await sharing("/shares", { token: replacement.secret }));
    // The hour has passed.
    await db().apiKey.update({ where: { id: old.id }, data: { retiresAt: new Date(Date.now() - 1000) } });
    await expectSharingError(await sharing("/shares", { token: old.secret }), 401, "UNAUTHENTICATED");
    await json(await sharing("/shares", { token: replacement.secret }));
  });

  it("keeps its errors out of /api/v1 and /api/v1's out of it", async () => {
    const v1 = await fetch(`${server.url}/api/v1/orders/${otherOrderId}`, {
      headers: { Authorization: `Bearer ${key}` },
    });
    expect(v1.status).toBe(404);
    expect(v1.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    const shared = await sharing(`/shares/orders/schemas/${otherOrderId}/tables`);
    expect(shared.headers.get("content-type")).not.toMatch(/problem/);
    await expectSharingError(shared, 404, "RESOURCE_DOES_NOT_EXIST");
  });
});

describe("the rate limit", () => {
  it("shares the account's 60 requests a minute with /api/v1, and answers the 61st with 429 REQUEST_LIMIT_EXCEEDED", async () => {
    const limited = await buyer("sharing-limited");
    const limitedKey = (await apiKey(limited.id)).secret;
    await startOfAFixedWindow();
    for (let i = 0; i < 30; i++) {
      const v1 = await fetch(`${server.url}/api/v1/orders`, { headers: { Authorization: `Bearer ${limitedKey}` } });
      expect(v1.status).toBe(200);
      const shared = await sharing("/shares", { token: limitedKey });
      expect(shared.status).toBe(200);
      expect(shared.headers.get("ratelimit-policy")).toMatch(/;q=60;w=60$/);
    }
    const refused = await sharing("/shares/orders/schemas", { token: limitedKey });
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    await expectSharingError(refused, 429, "REQUEST_LIMIT_EXCEEDED");
    const v1 = await fetch(`${server.url}/api/v1/orders`, { headers: { Authorization: `Bearer ${limitedKey}` } });
    expect(v1.status).toBe(429);
    expect(v1.headers.get("content-type")).toMatch(/^application\/problem\+json/);
  });
});

describe("a Delta Sharing client's request sequence", () => {
  it("lists all tables, reads each table's metadata, queries it, fetches every file and reads it with DuckDB", async () => {
    const capabilities = { "delta-sharing-capabilities": "responseformat=delta,parquet" };
    const tables = await allPages<TableItem>("/shares/orders/all-tables", 3);
    expect(tables.length).toBeGreaterThanOrEqual(8);
    const rowsByFile = new Map<string, number | null>();
    for (const orderId of new Set(tables.map((table) => table.schema))) {
      for (const file of (await apiOrder(orderId)).files) {
        if (file.table) rowsByFile.set(`${orderId}.${file.table.name}`, file.rows);
      }
    }
    for (const table of tables) {
      const metadata = await ndjson(
        await sharing(`${tablePath(table.schema, table.name)}/metadata`, { headers: capabilities }),
      );
      const schemaString = (metadata[1] as { metaData: { schemaString: string } }).metaData.schemaString;
      const { lines } = await query(table.schema, table.name, {}, capabilities);
      expect((lines[1] as { metaData: { schemaString: string } }).metaData.schemaString).toBe(schemaString);
      const files = lines.filter((line) => "file" in line).map((line) => (line as { file: FileLine }).file);
      expect(files).toHaveLength(1);
      const parquet = await fetchAndRead(files[0]!, schemaString);
      expect(parquet.rows).toBe(rowsByFile.get(`${table.schema}.${table.name}`));
    }
  });
});
