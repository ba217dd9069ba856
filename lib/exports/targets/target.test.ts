import { createHash, randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalFile, sendInParts, SourceChangedError, wholeVerified, type ExpectedObject } from "./target";

/**
 * How a copy reads and checks a stored file before a store completes the object: part by part from a
 * local file or a stream (each part's MD5 for the store, the whole checked against the record), or
 * whole for a small file. A source whose bytes are not the record's never gets past these.
 */
const PART = 64 * 1024;
let dir: string;
const expectOf = (bytes: Buffer): ExpectedObject => ({
  size: bytes.length,
  sha256: createHash("sha256").update(bytes).digest("hex"),
  contentType: "application/octet-stream",
});
const md5 = (bytes: Buffer) => createHash("md5").update(bytes).digest();

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "export-target-"));
});
afterAll(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

async function localFile(name: string, bytes: Buffer): Promise<LocalFile> {
  const file = path.join(dir, name);
  await fs.writeFile(file, bytes);
  return new LocalFile(file);
}

/** A stream of `bytes` in chunks of odd sizes (parts never line up with them). */
const chunked = (bytes: Buffer, size = 10_007) =>
  Readable.from(
    Array.from({ length: Math.ceil(bytes.length / size) }, (_, i) => bytes.subarray(i * size, (i + 1) * size)),
  );

describe("sendInParts", () => {
  const sizes = [0, 1, PART - 1, PART, PART + 1, 3 * PART, 3 * PART + 12_345];
  for (const size of sizes) {
    for (const kind of ["local file", "stream"] as const) {
      it(`sends ${size} bytes from a ${kind} as parts whose MD5s and bytes are the file's`, async () => {
        const bytes = randomBytes(size);
        const source = kind === "local file" ? await localFile(`f-${size}`, bytes) : chunked(bytes);
        const received: { index: number; bytes: Buffer; md5: Buffer }[] = [];
        const buffers = new Set<ArrayBufferLike>();
        const sent = await sendInParts(
          source,
          expectOf(bytes),
          { partSize: PART, inFlight: 2, wholeMd5: true, signal: new AbortController().signal },
          async (part, index, partMd5) => {
            buffers.add(part.buffer);
            await new Promise((resolve) => setTimeout(resolve, index % 2));
            received.push({ index, bytes: Buffer.from(part), md5: partMd5 });
          },
        );
        received.sort((a, b) => a.index - b.index);
        expect(Buffer.concat(received.map((part) => part.bytes)).equals(bytes)).toBe(true);
        expect(received.length).toBe(Math.max(1, Math.ceil(size / PART)));
        for (const part of received) expect(part.md5.equals(md5(part.bytes))).toBe(true);
        expect(sent.partMd5s.map((digest) => digest.toString("hex"))).toEqual(
          received.map((part) => part.md5.toString("hex")),
        );
        expect(sent.md5).toBe(md5(bytes).toString("hex"));
        // Two in flight and one being read: never more than three buffers, whatever the size.
        expect(buffers.size).toBeLessThanOrEqual(3);
      });
    }
  }

  it("refuses a source whose bytes are not the record's, after sending but before the caller completes", async () => {
    const bytes = randomBytes(2 * PART + 5);
    const changed = Buffer.from(bytes);
    changed[PART + 3] = changed[PART + 3]! ^ 0xff;
    for (const source of [await localFile("changed", changed), chunked(changed)]) {
      await expect(
        sendInParts(
          source,
          expectOf(bytes),
          { partSize: PART, inFlight: 2, signal: new AbortController().signal },
          async () => {},
        ),
      ).rejects.toThrow(SourceChangedError);
    }
  });

  it("stops reading a source longer than its record as soon as it passes the recorded size", async () => {
    const recorded = randomBytes(PART);
    const longer = Buffer.concat([recorded, randomBytes(5 * PART)]);
    let sent = 0;
    await expect(
      sendInParts(
        await localFile("longer", longer),
        expectOf(recorded),
        { partSize: PART, inFlight: 1, signal: new AbortController().signal },
        async () => {
          sent++;
        },
      ),
    ).rejects.toThrow(/longer than its record says/);
    expect(sent).toBe(1);
  });

  it("throws the first failed send once the parts in flight settle, and reads no further", async () => {
    const bytes = randomBytes(6 * PART);
    let settled = 0;
    const attempted: number[] = [];
    await expect(
      sendInParts(
        chunked(bytes),
        expectOf(bytes),
        { partSize: PART, inFlight: 2, signal: new AbortController().signal },
        async (_part, index) => {
          attempted.push(index);
          await new Promise((resolve) => setTimeout(resolve, 5));
          settled++;
          if (index === 1) throw new Error("the store refused part 2");
        },
      ),
    ).rejects.toThrow("the store refused part 2");
    expect(settled).toBe(attempted.length);
    expect(attempted.length).toBeLessThan(6);
  });

  it("stops when the copy is aborted (the lease lost, or no byte moved)", async () => {
    const bytes = randomBytes(4 * PART);
    const controller = new AbortController();
    await expect(
      sendInParts(
        await localFile("aborted", bytes),
        expectOf(bytes),
        { partSize: PART, inFlight: 1, signal: controller.signal },
        async (_part, index) => {
          if (index === 0) controller.abort(new Error("the run's lease was lost"));
        },
      ),
    ).rejects.toThrow("the run's lease was lost");
  });
});

describe("wholeVerified", () => {
  it("takes a small file's bytes from a buffer, a local file or a stream, with their MD5", async () => {
    const bytes = randomBytes(1000);
    for (const source of [bytes, await localFile("small", bytes), chunked(bytes, 333)]) {
      const whole = await wholeVerified(source, expectOf(bytes), new AbortController().signal);
      expect(whole.bytes.equals(bytes)).toBe(true);
      expect(whole.md5.equals(md5(bytes))).toBe(true);
    }
  });

  it("refuses bytes that are not the record's: another size or another sha256", async () => {
    const bytes = randomBytes(1000);
    for (const other of [bytes.subarray(0, 999), Buffer.concat([bytes, Buffer.from([0])]), randomBytes(1000)]) {
      await expect(wholeVerified(other, expectOf(bytes), new AbortController().signal)).rejects.toThrow(
        SourceChangedError,
      );
    }
  });
});
