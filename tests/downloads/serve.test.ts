import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createBuyer } from "../../lib/buyers";
import { db } from "../../lib/db/client";
import { DOWNLOAD_LINK_TTL_SECONDS } from "../../lib/contract";
import { downloadUrl } from "../../lib/downloads/links";
import { serveDownload } from "../../lib/http/download-link";
import { signDownloadToken } from "../../lib/downloads/token";
import { addOrderFile, createOrder, setOrderStatus } from "../../lib/operator/orders";
import type { OrderStatus } from "../../lib/schemas/order-status";
import { localStorage } from "../../lib/storage";
import { LOCAL_READ_CHUNK_BYTES } from "../../lib/storage/local";
import { createTestEnvironment } from "../helpers/database";
import type { TestEnvironment } from "../helpers/fixtures";
import { expectProblem } from "../helpers/problem";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** 1000 bytes, no two neighbouring ranges alike, so a wrong offset shows. */
const CONTENT = Buffer.from(Array.from({ length: 1000 }, (_, index) => (index * 7) % 251));
// Binary: a data file added on its own is a table's part, seen only once its version is made (Part 8).
const FILE_NAME = 'données "2024".bin';

let env: TestEnvironment;
let file: { id: string; sha256: string; size: number };
let otherOrderId: string;
let otherFileId: string;

beforeAll(async () => {
  env = await createTestEnvironment("downloads");
  process.env.AUTH_SECRET = "download-serve-test-secret-0123456789abcdef";

  const buyer = await createBuyer("downloads@example.com");
  const order = await createOrder({ buyerId: buyer.id, name: "Prices", status: "delivered" });
  file = await addOrderFile({ orderId: order.id, source: Readable.from([CONTENT]), name: FILE_NAME });
  // A second order whose status the refusal tests change, so the others keep a delivered file.
  const other = await createOrder({ buyerId: buyer.id, name: "Reviews", status: "delivered" });
  otherOrderId = other.id;
  otherFileId = (await addOrderFile({ orderId: other.id, source: Readable.from([CONTENT]), name: "reviews.bin" })).id;
});

afterEach(() => {
  vi.restoreAllMocks();
});

afterAll(async () => {
  await env?.cleanup();
});

const validToken = (fileId = file.id) =>
  signDownloadToken({ fileId, expiresAt: new Date(Date.now() + DOWNLOAD_LINK_TTL_SECONDS * 1000) });

function download(
  options: { token?: string; method?: string; headers?: Record<string, string>; signal?: AbortSignal; now?: Date } = {},
) {
  const token = options.token ?? validToken();
  const request = new Request(`http://localhost/api/dl/${token}`, {
    method: options.method ?? "GET",
    headers: options.headers,
    signal: options.signal,
  });
  return serveDownload(request, token, { now: options.now });
}

/** `text` with the character at `index` replaced by a different one. */
const alter = (text: string, index: number) =>
  text.slice(0, index) + (text[index] === "A" ? "B" : "A") + text.slice(index + 1);

const bodyOf = async (response: Response) => Buffer.from(await response.arrayBuffer());
const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

describe("a signed download link", () => {
  it("serves the whole file with the download headers", async () => {
    const response = await download();
    expect(response.status).toBe(200);
    expect(Object.fromEntries(response.headers)).toMatchObject({
      "content-type": "application/octet-stream",
      "content-length": "1000",
      "content-disposition": `attachment; filename="donn_es _2024_.bin"; filename*=UTF-8''donn%C3%A9es%20%222024%22.bin`,
      etag: `"${file.sha256}"`,
      "accept-ranges": "bytes",
      "cache-control": "private, no-store, no-transform",
      "x-content-type-options": "nosniff",
    });
    expect(new Date(response.headers.get("last-modified") ?? "").getTime()).not.toBeNaN();
    expect(response.headers.get("x-request-id")).toMatch(UUID);
    expect(response.headers.has("content-range")).toBe(false);
    const body = await bodyOf(response);
    expect(body.equals(CONTENT)).toBe(true);
    expect(sha256(body)).toBe(file.sha256);
  });

  it("is what downloadUrl hands out", async () => {
    const row = await db().orderFile.findUniqueOrThrow({ where: { id: file.id } });
    const url = await downloadUrl(row, "https://example.test/");
    expect(url).toMatch(/^https:\/\/example\.test\/api\/dl\/[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    const token = url.split("/api/dl/")[1] ?? "";
    expect((await download({ token })).status).toBe(200);
    expect((await download({ token, now: new Date(Date.now() + DOWNLOAD_LINK_TTL_SECONDS * 1000) })).status).toBe(410);
  });

  it.each([
    ["bytes=10-19", 10, 19],
    ["bytes=-5", 995, 999],
    ["bytes=100-", 100, 999],
    ["bytes=990-5000", 990, 999],
  ])("serves %s as 206 bytes %d-%d", async (range, start, end) => {
    const response = await download({ headers: { Range: range } });
    expect(response.status).toBe(206);
    expect(response.headers.get("content-range")).toBe(`bytes ${start}-${end}/1000`);
    expect(response.headers.get("content-length")).toBe(String(end - start + 1));
    expect(response.headers.get("etag")).toBe(`"${file.sha256}"`);
    expect(response.headers.get("content-disposition")).toMatch(/^attachment;/);
    expect((await bodyOf(response)).equals(CONTENT.subarray(start, end + 1))).toBe(true);
  });

  it("honours a range under an If-Range naming the current ETag", async () => {
    const response = await download({ headers: { Range: "bytes=10-19", "If-Range": `"${file.sha256}"` } });
    expect(response.status).toBe(206);
    expect((await bodyOf(response)).equals(CONTENT.subarray(10, 20))).toBe(true);
  });

  it.each([
    ["If-Range naming another version", { Range: "bytes=10-19", "If-Range": '"0123"' }],
    ["If-Range with a date", { Range: "bytes=10-19", "If-Range": "Tue, 01 Jan 2030 12:00:00 GMT" }],
    ["several ranges", { Range: "bytes=0-1,5-6" }],
    ["a malformed Range", { Range: "bytes=ten-twenty" }],
    ["a reversed Range", { Range: "bytes=20-10" }],
  ])("serves the whole file (200) for %s", async (_case, headers) => {
    const response = await download({ headers });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-length")).toBe("1000");
    expect(response.headers.has("content-range")).toBe(false);
    expect((await bodyOf(response)).equals(CONTENT)).toBe(true);
  });

  it.each(["bytes=1000-", "bytes=5000-6000", "bytes=-0"])("answers %s with 416", async (range) => {
    const response = await download({ headers: { Range: range } });
    expect(response.headers.get("content-range")).toBe("bytes */1000");
    await expectProblem(response, 416, "range_not_satisfiable", /1000 bytes/);
  });

  // Functions, because the ETag is known only once beforeAll has stored the file.
  it.each([
    ["the current ETag", (etag: string) => ({ "If-None-Match": etag })],
    ["the weak form of the current ETag", (etag: string) => ({ "If-None-Match": `W/${etag}` })],
    ["*", () => ({ "If-None-Match": "*" })],
    ["a later If-Modified-Since", () => ({ "If-Modified-Since": new Date(Date.now() + 60_000).toUTCString() })],
  ])("answers 304 without a body for %s", async (_case, conditional) => {
    const etag = `"${file.sha256}"`;
    const response = await download({ headers: { ...conditional(etag), Range: "bytes=0-9" } });
    expect(response.status).toBe(304);
    expect(response.headers.get("etag")).toBe(etag);
    expect(response.headers.get("cache-control")).toBe("private, no-store, no-transform");
    expect(response.headers.get("x-request-id")).toMatch(UUID);
    expect(response.body).toBeNull();
  });

  it("serves the file when If-None-Match names another version", async () => {
    const response = await download({ headers: { "If-None-Match": '"0123"' } });
    expect(response.status).toBe(200);
    expect((await bodyOf(response)).equals(CONTENT)).toBe(true);
  });

  it("answers HEAD with GET's headers, no body and no file stream", async () => {
    const get = await download();
    await get.arrayBuffer();
    const read = vi.spyOn(localStorage(), "read");
    for (const headers of [{}, { Range: "bytes=10-19" }] as Record<string, string>[]) {
      const head = await download({ method: "HEAD", headers });
      expect(head.status).toBe(200);
      const withoutId = (response: Response) =>
        Object.fromEntries([...response.headers].filter(([name]) => name !== "x-request-id"));
      expect(withoutId(head)).toEqual(withoutId(get));
      expect(head.body).toBeNull();
    }
    expect(read).not.toHaveBeenCalled();
  });
});

describe("refusals", () => {
  afterEach(async () => {
    await setOrderStatus(otherOrderId, "delivered");
  });

  it.each(["refunded", "unfinished"] as const satisfies readonly OrderStatus[])(
    "refuses a file of a %s order with 409 naming the status",
    async (status) => {
      await setOrderStatus(otherOrderId, status);
      const response = await download({ token: validToken(otherFileId) });
      await expectProblem(
        response,
        409,
        "order_not_delivered",
        new RegExp(`^Order ${otherOrderId} is ${status}; files can be downloaded only from delivered orders\\.$`),
      );
    },
  );

  it("re-checks the order: a link made while delivered stops working once refunded", async () => {
    const token = validToken(otherFileId);
    expect((await download({ token })).status).toBe(200);
    await setOrderStatus(otherOrderId, "refunded");
    await expectProblem(await download({ token }), 409, "order_not_delivered", /is refunded/);
    expect((await download({ token, method: "HEAD" })).status).toBe(409);
  });

  it.each([
    ["a link with an altered payload", () => ({ token: alter(validToken(), 2) }), 403, "download_link_invalid"],
    ["a malformed link", () => ({ token: "not-a-link" }), 403, "download_link_invalid"],
    [
      "an expired link",
      () => ({ now: new Date(Date.now() + (DOWNLOAD_LINK_TTL_SECONDS + 1) * 1000) }),
      410,
      "download_link_expired",
    ],
    [
      "a validly signed link to an unknown file",
      () => ({ token: validToken("fil_00000000000000000000000000000000") }),
      404,
      "file_not_found",
    ],
  ])("answers %s with a problem, never the file", async (_case, options, status, code) => {
    const read = vi.spyOn(localStorage(), "read");
    await expectProblem(await download(options()), status, code);
    const head = await download({ ...options(), method: "HEAD" });
    expect(head.status).toBe(status);
    expect(head.body).toBeNull();
    expect(read).not.toHaveBeenCalled();
  });

  it.each([
    "fil_\u0000",
    "fil_",
    "x".repeat(200),
    "fil_0123456789abcdef0123456789abcdeg",
    "ord_0123456789abcdef0123456789abcdef",
  ])("answers a validly signed token for a malformed file id %j with 404, without a query", async (fileId) => {
    const query = vi.spyOn(db().orderFile, "findUnique");
    await expectProblem(await download({ token: validToken(fileId) }), 404, "file_not_found");
    expect(query).not.toHaveBeenCalled();
  });

  it("says how to get a new link when one has expired", async () => {
    const response = await download({ now: new Date(Date.now() + (DOWNLOAD_LINK_TTL_SECONDS + 1) * 1000) });
    await expectProblem(response, 410, "download_link_expired", /Request a new one from the API/);
  });
});

describe("streaming", () => {
  const bigSize = 16 * 1024 * 1024;
  let bigFileId: string;

  beforeAll(async () => {
    const buyer = await createBuyer("streaming@example.com");
    const order = await createOrder({ buyerId: buyer.id, name: "Large", status: "delivered" });
    const chunk = Buffer.alloc(1024 * 1024, 7);
    const source = Readable.from(Array.from({ length: bigSize / chunk.length }, () => chunk));
    bigFileId = (await addOrderFile({ orderId: order.id, source, name: "large.bin" })).id;
  });

  /** The Node stream the storage opened for the last download. */
  function openedStream(read: { mock: { results: { value: unknown }[] } }) {
    return read.mock.results.at(-1)?.value as Readable & { bytesRead: number };
  }

  it("reads the file only as fast as the client consumes it", async () => {
    const read = vi.spyOn(localStorage(), "read");
    const response = await download({ token: validToken(bigFileId) });
    const reader = response.body!.getReader();
    await reader.read();
    await new Promise((resolve) => setTimeout(resolve, 200));
    // One chunk handed over, one queued and one being read: a few 1 MiB reads, not the whole file.
    expect(openedStream(read).bytesRead).toBeLessThanOrEqual(4 * LOCAL_READ_CHUNK_BYTES);
    expect(openedStream(read).bytesRead).toBeLessThan(bigSize / 4);
    await reader.cancel();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(openedStream(read).destroyed).toBe(true);
  });

  it("closes the file stream when the client disconnects while reading", async () => {
    const read = vi.spyOn(localStorage(), "read");
    const client = new AbortController();
    const response = await download({ token: validToken(bigFileId), signal: client.signal });
    expect(response.status).toBe(200);
    await response.body!.getReader().read();
    client.abort();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(openedStream(read).destroyed).toBe(true);
  });

  it("opens no file when the client disconnects before the body is read", async () => {
    const read = vi.spyOn(localStorage(), "read");
    const client = new AbortController();
    const response = await download({ token: validToken(bigFileId), signal: client.signal });
    client.abort();
    await response.body!.cancel();
    expect(read).not.toHaveBeenCalled();
  });
});
