import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ensureDataDir } from "../../lib/db/config";
import { LocalDirectoryStorage } from "../../lib/storage/local";

let root: string;
beforeAll(async () => {
  root = await fs.mkdtemp(path.join(os.tmpdir(), "storage-modes-"));
});
afterAll(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

const mode = async (file: string) => (await fs.stat(file)).mode & 0o777;

it("stores files readable by the app's user only", async () => {
  // A permissive umask, as on many machines, must not loosen them.
  const umask = process.umask(0o002);
  try {
    const storageDir = path.join(root, "files");
    const stored = await new LocalDirectoryStorage(storageDir).put(Readable.from([Buffer.from("bytes")]), "ord_1");
    const file = path.join(storageDir, stored.key);
    expect(await mode(file)).toBe(0o600);
    expect(await mode(path.dirname(file))).toBe(0o700);
    expect(await mode(storageDir)).toBe(0o700);
  } finally {
    process.umask(umask);
  }
});

it("creates the data directory private, and tightens an existing one", async () => {
  // As root, the embedded PostgreSQL's user must pass through it (not list it) to reach its cluster.
  const expected = os.userInfo().uid === 0 ? 0o711 : 0o700;
  const fresh = path.join(root, "fresh", ".data");
  await ensureDataDir(fresh);
  expect(await mode(fresh)).toBe(expected);
  const existing = path.join(root, "existing");
  await fs.mkdir(existing, { mode: 0o755 });
  await fs.chmod(existing, 0o755);
  await ensureDataDir(existing);
  expect(await mode(existing)).toBe(expected);
});
