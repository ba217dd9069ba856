import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import http from "node:http";
import net, { type AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { db } from "../../lib/db/client";
import { createDestination, testOwnDestination } from "../../lib/exports/destinations";
import { FAILURE_MAX_LENGTH } from "../../lib/exports/failures";
import { exportAddressFilter, guardedAgents } from "../../lib/exports/network";
import { runExport } from "../../lib/exports/runs";
import { closeJobQueue } from "../../lib/queue";
import { logFile } from "../../lib/log";
import { addOrderFile, createOrder, setOrderStatus } from "../../lib/operator/orders";
import { OPERATOR } from "../../lib/security/log";
import { createTestEnvironment } from "../helpers/database";
import { buyer, type TestEnvironment } from "../helpers/fixtures";
import { startTestS3, TEST_BUCKET, type TestS3 } from "../helpers/s3";
import { TEST_AUTH_SECRET } from "../helpers/server";

/**
 * Stores that answer badly, as fake HTTP servers on loopback behind an S3 or Azure destination:
 * garbage, nothing at all, a 10 MB error body that echoes the secret, a redirect to the cloud
 * metadata address, and a name that resolves to loopback while private addresses are not allowed.
 * Each is a clear, short error to the buyer with no secret in it; nothing is sent to a refused
 * address; and the same process then exports to a good store.
 */

const SECRET = "hostile-secret-key-4f9a2c";
const AZURE_KEY = Buffer.from("hostile-account-key-7b1e").toString("base64");

let env: TestEnvironment;
let s3: TestS3;
const servers: http.Server[] = [];
// What the app logs (to this test file's log: tests/helpers/test-log.ts), to check no secret reaches a log line.
const logged = () => readFileSync(logFile()!, "utf8");

beforeAll(async () => {
  env = await createTestEnvironment("exports_hostile");
  s3 = await startTestS3({ buckets: [TEST_BUCKET, "good-lake"] });
  Object.assign(process.env, {
    STORAGE_DRIVER: "local",
    AUTH_SECRET: TEST_AUTH_SECRET,
    EXPORT_ALLOW_PRIVATE: "true",
    EXPORT_STALL_TIMEOUT_MS: "1500",
  });
}, 60_000);

afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    server.close();
  }
  await closeJobQueue();
  await s3?.stop();
  await env?.cleanup();
});

/** A fake store on loopback answering every request with `answer`; returns its origin and what it was asked. */
async function fakeStore(answer: (request: http.IncomingMessage, response: http.ServerResponse) => void) {
  const requests: string[] = [];
  const server = http.createServer((request, response) => {
    requests.push(`${request.method} ${request.url}`);
    request.resume();
    answer(request, response);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

async function s3Destination(buyerId: string, endpoint: string) {
  return createDestination(
    buyerId,
    {
      name: "hostile",
      type: "s3",
      fields: {
        bucket: "lake",
        region: "us-east-1",
        endpoint,
        force_path_style: true,
        access_key_id: "AKIAHOSTILE",
        secret_access_key: SECRET,
      },
    },
    OPERATOR,
  );
}

/** A delivered order's run to `destinationId`, attempted once: its outcome and stored error. */
async function attemptOnce(buyerId: string, destinationId: string) {
  const order = await createOrder({ buyerId, name: "hostile", status: "unfinished" });
  await addOrderFile({ orderId: order.id, name: "a.bin", source: Readable.from([Buffer.from("a\n1\n")]) });
  await setOrderStatus(order.id, "delivered");
  const run = await db().exportRun.findFirstOrThrow({ where: { destinationId, orderId: order.id } });
  const started = Date.now();
  const outcome = await runExport(run.id);
  const stored = await db().exportRun.findUniqueOrThrow({ where: { id: run.id } });
  return { outcome, stored, ms: Date.now() - started };
}

function expectClear(message: string | null, pattern: RegExp) {
  expect(message).toMatch(pattern);
  expect(message!.length).toBeLessThanOrEqual(FAILURE_MAX_LENGTH);
  expect(message).not.toContain(SECRET);
  expect(message).not.toContain(AZURE_KEY);
  expect(message).not.toMatch(/\p{Cc}/u);
}

describe("exports to stores that answer badly", () => {
  it.each([
    [
      "garbage",
      (_request: http.IncomingMessage, response: http.ServerResponse) =>
        response.writeHead(500, { "content-type": "application/xml" }).end(randomBytes(3000)),
      /answered 500|failed/,
    ],
    [
      "a 10 MB error body that echoes the secret",
      (_request: http.IncomingMessage, response: http.ServerResponse) => {
        const body = `<?xml version="1.0"?><Error><Code>AccessDenied</Code><Message>${`no ${SECRET} `.repeat(400_000)}</Message></Error>`;
        response.writeHead(403, { "content-type": "application/xml" }).end(body);
      },
      /refused the credentials \(403/,
    ],
    ["nothing at all (a store that hangs)", () => {}, /socket|timed out|timeout|no byte moved|did not answer|aborted/i],
  ])("%s: a clear retry error, no secret, bounded time", async (_what, answer, pattern) => {
    const account = await buyer("hostile");
    const store = await fakeStore(answer);
    const { id } = await s3Destination(account.id, store.origin);
    const { outcome, stored, ms } = await attemptOnce(account.id, id);
    expect(outcome.result).toBe("retry");
    expect(stored.state).toBe("pending");
    expectClear(stored.error, pattern);
    expect(ms).toBeLessThan(20_000);
    const tested = await testOwnDestination(account.id, id, OPERATOR);
    expect(tested.ok).toBe(false);
    expectClear(tested.message, /./);
  });

  it("read no more than 64 KiB of an endless error body, from S3 or Azure, and quote none of it at length", async () => {
    const account = await buyer("hostile-endless");
    const closed: number[] = [];
    const store = await fakeStore((request, response) => {
      // Nothing there (a HEAD has no body), so the run goes on to write, and is answered an endless refusal.
      if (request.method === "HEAD") return response.writeHead(404).end();
      response.writeHead(403, { "content-type": "application/xml" });
      response.write(`<?xml version="1.0"?><Error><Code>AccessDenied</Code><Message>`);
      const chunk = Buffer.from(`no ${SECRET} `.repeat(2000));
      let sent = 0;
      const pump = () => {
        while (!response.destroyed && sent < 2e9) {
          sent += chunk.length;
          if (!response.write(chunk)) return void response.once("drain", pump);
        }
      };
      response.on("close", () => closed.push(sent));
      pump();
    });
    const rssBefore = process.memoryUsage().rss;
    for (const [type, fields] of [
      [
        "s3",
        {
          bucket: "lake",
          endpoint: store.origin,
          force_path_style: true,
          access_key_id: "A",
          secret_access_key: SECRET,
        },
      ],
      ["azure", { account_url: `${store.origin}/acct`, container: "lake", account_key: AZURE_KEY }],
    ] as const) {
      const { id } = await createDestination(account.id, { name: `endless ${type}`, type, fields }, OPERATOR);
      const { outcome, stored, ms } = await attemptOnce(account.id, id);
      expect(outcome.result).toBe("retry");
      expectClear(stored.error, /refused the credentials \(403/);
      expect(ms).toBeLessThan(10_000);
    }
    // Each endless body was given up (the connection closed) after what the sockets' buffers hold, not read on.
    await vi.waitFor(() => expect(closed.length).toBeGreaterThanOrEqual(2), { timeout: 5000 });
    for (const sent of closed) expect(sent).toBeLessThan(64 * 1024 * 1024);
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(100 * 1024 * 1024);
  });

  it("a store that takes a write, then answers an endless object: its read-back is given up at what was sent", async () => {
    const account = await buyer("hostile-endless-object");
    const store = await fakeStore((request, response) => {
      if (request.method === "PUT") return response.writeHead(200, { etag: '"not-an-md5"' }).end();
      if (request.method !== "GET") return response.writeHead(204).end();
      response.writeHead(200, { "content-type": "application/octet-stream" });
      const chunk = Buffer.alloc(64 * 1024, 1);
      const pump = () => {
        while (!response.destroyed && response.write(chunk));
        if (!response.destroyed) response.once("drain", pump);
      };
      pump();
    });
    const { id } = await s3Destination(account.id, store.origin);
    const started = Date.now();
    const tested = await testOwnDestination(account.id, id, OPERATOR);
    expect(tested.ok).toBe(false);
    expectClear(tested.message, /not what was sent|more than 64 KiB/);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("an Azure store answering a 10 MB error body that echoes the key: a short sentence", async () => {
    const account = await buyer("hostile-azure-10mb");
    const store = await fakeStore((_request, response) => {
      const body = `<?xml version="1.0"?><Error><Code>AuthenticationFailed</Code><Message>${`no ${AZURE_KEY} `.repeat(250_000)}</Message></Error>`;
      response
        .writeHead(403, { "content-type": "application/xml", "x-ms-error-code": "AuthenticationFailed" })
        .end(body);
    });
    const { id } = await createDestination(
      account.id,
      {
        name: "azure 10 MB",
        type: "azure",
        fields: { account_url: `${store.origin}/acct`, container: "lake", account_key: AZURE_KEY },
      },
      OPERATOR,
    );
    const { outcome, stored } = await attemptOnce(account.id, id);
    expect(outcome.result).toBe("retry");
    expectClear(stored.error, /refused the credentials \(403/);
  });

  it("an SFTP server sending an endless banner before its version: refused after a bounded read", async () => {
    const account = await buyer("hostile-banner");
    const line = `${"banner ".repeat(1000)}\r\n`;
    const server = net.createServer((socket) => {
      socket.on("error", () => {});
      const pump = () => {
        while (!socket.destroyed && socket.write(line));
        if (!socket.destroyed) socket.once("drain", pump);
      };
      pump();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const fields = {
        host: "127.0.0.1",
        port: (server.address() as AddressInfo).port,
        username: "u",
        password: SECRET,
        directory: "/up",
        host_key_sha256: `SHA256:${"A".repeat(43)}`,
      };
      const { id } = await createDestination(account.id, { name: "banner", type: "sftp", fields }, OPERATOR);
      const { outcome, stored, ms } = await attemptOnce(account.id, id);
      expect(outcome.result).toBe("retry");
      expectClear(stored.error, /greeting|header|banner|failed/i);
      expect(ms).toBeLessThan(20_000);
    } finally {
      server.close();
    }
  });

  it("never follow a redirect, and never connect to the metadata address", async () => {
    const account = await buyer("hostile-redirect");
    const elsewhere = await fakeStore((_request, response) => response.writeHead(200).end());
    const store = await fakeStore((_request, response) =>
      response.writeHead(307, { location: `${elsewhere.origin}/acct/lake/a.csv` }).end(),
    );
    for (const [type, fields] of [
      ["azure", { account_url: `${store.origin}/acct`, container: "lake", account_key: AZURE_KEY }],
      [
        "s3",
        {
          bucket: "lake",
          endpoint: store.origin,
          force_path_style: true,
          access_key_id: "A",
          secret_access_key: SECRET,
        },
      ],
    ] as const) {
      const { id } = await createDestination(account.id, { name: `redirecting ${type}`, type, fields }, OPERATOR);
      const { outcome, stored } = await attemptOnce(account.id, id);
      expect(outcome.result).toBe("retry");
      expectClear(stored.error, /answered 307, a redirect: exports do not follow redirects/);
    }
    expect(elsewhere.requests).toEqual([]);
    // The agents every store client uses refuse the metadata address before a packet is sent.
    const { httpAgent } = guardedAgents(exportAddressFilter());
    const refused = await new Promise<Error>((resolve) =>
      http.get("http://169.254.169.254/latest/meta-data/", { agent: httpAgent }, () => {}).on("error", resolve),
    );
    expect(refused.message).toBe("169.254.169.254 is a private, local or reserved address");
  });

  it("refuse a name that resolves to loopback unless private addresses are allowed", async () => {
    const account = await buyer("hostile-name");
    const store = await fakeStore((_request, response) => response.writeHead(200).end());
    const { id } = await s3Destination(account.id, store.origin.replace("127.0.0.1", "localhost"));
    process.env.EXPORT_ALLOW_PRIVATE = "false";
    try {
      const tested = await testOwnDestination(account.id, id, OPERATOR);
      expect(tested.ok).toBe(false);
      expectClear(tested.message, /the address is refused \(localhost is a local address\)/);
      expect(store.requests).toEqual([]);
    } finally {
      process.env.EXPORT_ALLOW_PRIVATE = "true";
    }
  });

  it("keep working: the same process then exports to a good store, and no secret reached a log line", async () => {
    const account = await buyer("hostile-then-good");
    const { id } = await createDestination(
      account.id,
      {
        name: "good",
        type: "s3",
        fields: {
          bucket: "good-lake",
          endpoint: s3.endpoint,
          force_path_style: true,
          access_key_id: "S3RVER",
          secret_access_key: "S3RVER",
        },
      },
      OPERATOR,
    );
    const { outcome } = await attemptOnce(account.id, id);
    expect(outcome).toMatchObject({ result: "completed", files: 1 });
    expect(logged()).toContain("export run attempt");
    expect(logged()).not.toContain(SECRET);
    expect(logged()).not.toContain(AZURE_KEY);
  });
});
