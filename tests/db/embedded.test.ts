import { execFileSync } from "node:child_process";
import { promises as fs } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { embeddedDatabaseSettings } from "../../lib/db/config";
import { openEmbeddedDatabase } from "../../lib/db/embedded";
import { freePort } from "../helpers/server";

/**
 * A cluster of this test's own (its own directory and port), so it never meets the shared ones.
 * As root the server runs as the user postgres, which must be able to pass through the parent.
 */
const isRoot = os.userInfo().uid === 0;
let parent: string;
beforeAll(async () => {
  parent = await fs.mkdtemp(path.join(os.tmpdir(), "embedded-pg-"));
  if (isRoot) await fs.chmod(parent, 0o711);
});
afterAll(async () => {
  await fs.rm(parent, { recursive: true, force: true });
});

async function signIn(port: number, password: string): Promise<string> {
  const client = new pg.Client({ host: "127.0.0.1", port, user: "postgres", password, database: "postgres" });
  try {
    await client.connect();
    return "accepted";
  } catch (error) {
    return (error as { code?: string }).code === "28P01" ? "refused" : String(error);
  } finally {
    await client.end().catch(() => {});
  }
}

const mode = async (file: string) => (await fs.stat(file)).mode & 0o777;
const readPassword = async (file: string) => (await fs.readFile(file, "utf8")).trim();

it("generates the embedded PostgreSQL's password into a private file, and moves an old cluster off the fixed one", async () => {
  const settings = { ...embeddedDatabaseSettings(), dataDir: path.join(parent, "postgres"), port: await freePort() };
  const passwordFile = `${settings.dataDir}-password`;

  const first = await openEmbeddedDatabase(settings);
  let password: string;
  try {
    expect(await mode(passwordFile)).toBe(0o600);
    password = await readPassword(passwordFile);
    expect(password.length).toBeGreaterThanOrEqual(32);
    expect(decodeURIComponent(new URL(first.url).password)).toBe(password);
    expect(await signIn(settings.port, password)).toBe("accepted");
    expect(await signIn(settings.port, "postgres")).toBe("refused");
    // The cluster belongs to the user the server runs as (postgres, as root) and to nobody else.
    const cluster = await fs.stat(settings.dataDir);
    expect(cluster.mode & 0o777).toBe(0o700);
    const owner = isRoot ? Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" })) : os.userInfo().uid;
    expect(cluster.uid).toBe(owner);
    // initdb's password file went to a private directory that is gone again.
    expect((await fs.readdir(parent)).sort()).toEqual(["postgres", "postgres-password"]);

    // What a cluster made before passwords were generated looks like.
    const client = new pg.Client({ connectionString: first.url });
    await client.connect();
    await client.query("ALTER ROLE postgres PASSWORD 'postgres'");
    await client.end();
  } finally {
    await first.stop();
  }
  await fs.rm(passwordFile);

  const log: string[] = [];
  const second = await openEmbeddedDatabase(settings, (message) => log.push(message));
  try {
    expect(await mode(passwordFile)).toBe(0o600);
    const generated = await readPassword(passwordFile);
    expect(generated).not.toBe(password);
    expect(await signIn(settings.port, generated)).toBe("accepted");
    expect(await signIn(settings.port, "postgres")).toBe("refused");
    expect(log.join("\n")).toContain("fixed password is replaced");
  } finally {
    await second.stop();
  }

  // Opened again, it keeps the password it has.
  const third = await openEmbeddedDatabase(settings);
  try {
    expect(decodeURIComponent(new URL(third.url).password)).toBe(await readPassword(passwordFile));
  } finally {
    await third.stop();
  }
});

it("says why it did not start, in PostgreSQL's own words, when its port is taken", async () => {
  const settings = { ...embeddedDatabaseSettings(), dataDir: path.join(parent, "taken"), port: await freePort() };
  const holder = net.createServer();
  await new Promise<void>((resolve) => holder.listen(settings.port, "127.0.0.1", resolve));
  try {
    const error = await openEmbeddedDatabase(settings).catch((failure: unknown) => failure);
    expect((error as Error).message).toContain(`did not start on port ${settings.port}`);
    expect((error as Error).message).toMatch(/could not bind IPv4 address "127\.0\.0\.1": Address already in use/);
  } finally {
    await new Promise((resolve) => holder.close(resolve));
  }
});
