import { createHash } from "node:crypto";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addOrderFile, createOrder, setOrderStatus } from "../../lib/operator/orders";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startServer, type TestServer } from "../helpers/server";
import { buildTypeScriptClient, finished, runCli, startCli } from "./cli";
import { startCountingProxy } from "./proxy";
import { startOfAFixedWindow } from "../helpers/rate-limit";

/**
 * The TypeScript client's `dataset-access` command, built as users get it, against the production
 * server on a real PostgreSQL, through a proxy that counts the bytes of every download.
 */
let env: TestEnvironment;
let server: TestServer;
let proxy: Awaited<ReturnType<typeof startCountingProxy>>;
let workDir: string;
type Account = { id: string; key: string };
const accounts = {} as Record<"bulk" | "big" | "paced" | "forced", Account>;

const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");
const bigFile = Buffer.from(Uint8Array.from({ length: 24 * 1024 * 1024 }, (_, i) => (i * 31 + (i >> 12)) & 0xff));

async function account(label: string) {
  const created = await buyer(label);
  return { id: created.id, key: (await apiKey(created.id)).secret };
}

beforeAll(async () => {
  env = await createTestEnvironment("ts_client");
  workDir = await fs.mkdtemp(path.join(os.tmpdir(), "ts-client-"));
  const [built] = await Promise.all([
    buildTypeScriptClient(),
    (async () => {
      // 3 delivered orders with 600 small files in all, among 55 unfinished ones (two pages of orders). The
      // sync's 4 downloads at a time are as busy with 600 as they were with 2,500, which took 81 s of a CI run.
      accounts.bulk = await account("client-bulk");
      for (const [index, count] of [200, 200, 200].entries()) {
        const created = await createOrder({ buyerId: accounts.bulk.id, name: `bulk ${index}`, status: "delivered" });
        for (let i = 0; i < count; i++) {
          const content = Buffer.from(`order ${index} file ${i}\n`.repeat(1 + (i % 7)));
          await addOrderFile({
            orderId: created.id,
            // Binary, listed at once: a data file is a table's part, seen once its version is made (Part 8).
            name: `part-${String(i).padStart(4, "0")}.txt`,
            source: Readable.from([content]),
          });
        }
      }
      for (let i = 0; i < 55; i++)
        await createOrder({ buyerId: accounts.bulk.id, name: `pending ${i}`, status: "unfinished" });
      accounts.big = await account("client-big");
      await order(accounts.big.id, { name: "big", files: { "big.bin": bigFile } });
      accounts.paced = await account("client-paced");
      await order(accounts.paced.id, {
        name: "paced",
        files: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`f${i}.txt`, Buffer.from(`file ${i}\n`)])),
      });
      accounts.forced = await account("client-forced");
      await order(accounts.forced.id, { name: "forced", files: { "one.txt": Buffer.from("one\n") } });
    })(),
  ]);
  void built;
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    // The bulk and big accounts are exempt from 60/minute (600 downloads would take 10 minutes);
    // the paced and forced ones are not.
    env: { REDIS_URL: "", RATE_LIMIT_EXEMPT_BUYERS: `${accounts.bulk.id},${accounts.big.id}` },
  });
  proxy = await startCountingProxy(server.url);
}, 300_000);

afterAll(async () => {
  await proxy?.close();
  await server?.stop();
  await env?.cleanup();
  if (workDir) await fs.rm(workDir, { recursive: true, force: true });
});

const cliEnv = (key: string) => ({ DATASET_ACCESS_URL: proxy.url, DATASET_ACCESS_KEY: key });

describe("dataset-access sync", () => {
  it(
    "mirrors 600 files of 3 delivered orders, every sha256 verified; a second run transfers nothing",
    { timeout: 300_000 },
    async () => {
      const dir = path.join(workDir, "bulk");
      const first = await runCli(["sync", "--dir", dir, "--json"], cliEnv(accounts.bulk.key));
      expect(first.code, `${first.stderr}\n${first.stdout.slice(0, 3000)}`).toBe(0);
      const report = JSON.parse(first.stdout);
      expect(report).toMatchObject({
        orders: 58,
        delivered: 3,
        files: { total: 600, downloaded: 600, skipped: 0, failed: 0 },
        rate_limited_responses: 0,
      });
      const manifest = JSON.parse(await fs.readFile(path.join(dir, ".dataset-access.json"), "utf8"));
      const orderIds = Object.keys(manifest.orders);
      expect(orderIds).toHaveLength(3);
      let checked = 0;
      for (const id of orderIds) {
        for (const [name, file] of Object.entries(manifest.orders[id].files) as [string, { sha256: string }][]) {
          expect(sha256(await fs.readFile(path.join(dir, id, name)))).toBe(file.sha256);
          checked++;
        }
      }
      expect(checked).toBe(600);

      const bytesBefore = proxy.state.downloadBytes;
      const linksBefore = proxy.requests.filter(({ path }) => path.includes("/files/")).length;
      const second = await runCli(["sync", "--dir", dir, "--json"], cliEnv(accounts.bulk.key));
      expect(second.code, `${second.stderr}\n${second.stdout.slice(0, 3000)}`).toBe(0);
      expect(JSON.parse(second.stdout).files).toMatchObject({ downloaded: 0, resumed: 0, skipped: 600 });
      expect(proxy.state.downloadBytes).toBe(bytesBefore);
      expect(proxy.requests.filter(({ path }) => path.includes("/files/")).length).toBe(linksBefore);
    },
  );

  it(
    "resumes a file after the sync was killed (SIGKILL) in the middle of it, fetching no byte twice beyond the partial file's end",
    { timeout: 120_000 },
    async () => {
      const dir = path.join(workDir, "big");
      proxy.state.throttle = 4 * 1024 * 1024;
      const start = proxy.state.downloadBytes;
      const child = startCli(["sync", "--dir", dir, "--json"], cliEnv(accounts.big.key));
      while (proxy.state.downloadBytes - start < 6 * 1024 * 1024) await new Promise((r) => setTimeout(r, 50));
      child.kill("SIGKILL");
      await finished(child);
      proxy.state.throttle = 0;
      const servedBeforeKill = proxy.state.downloadBytes - start;
      const [orderDir] = (await fs.readdir(dir)).filter((name) => name.startsWith("ord_"));
      const partial = (await fs.stat(path.join(dir, orderDir!, "big.bin.part"))).size;
      expect(partial).toBeGreaterThan(0);
      expect(partial).toBeLessThan(bigFile.length);

      const resumedAt = proxy.requests.length;
      const rerun = await runCli(["sync", "--dir", dir, "--json"], cliEnv(accounts.big.key));
      expect(rerun.code, `${rerun.stderr}\n${rerun.stdout.slice(0, 3000)}`).toBe(0);
      expect(JSON.parse(rerun.stdout).files).toMatchObject({ resumed: 1, failed: 0 });
      // The rerun asked for exactly the bytes after the partial file's end, and got only those.
      const download = proxy.requests.slice(resumedAt).find(({ path }) => path.startsWith("/api/dl/"));
      expect(download?.range).toBe(`bytes=${partial}-`);
      expect(proxy.state.downloadBytes - start - servedBeforeKill).toBe(bigFile.length - partial);
      expect(sha256(await fs.readFile(path.join(dir, orderDir!, "big.bin")))).toBe(sha256(bigFile));
    },
  );

  it("detects a damaged partial file and fetches the file again whole", async () => {
    const dir = path.join(workDir, "big");
    const [orderDir] = (await fs.readdir(dir)).filter((name) => name.startsWith("ord_"));
    const target = path.join(dir, orderDir!, "big.bin");
    await fs.rm(target);
    await fs.writeFile(`${target}.part`, Buffer.alloc(1024 * 1024, 0x78)); // 1 MiB of "x": not the file's first bytes
    const rerun = await runCli(["sync", "--dir", dir, "--json"], cliEnv(accounts.big.key));
    expect(rerun.code, `${rerun.stderr}\n${rerun.stdout.slice(0, 3000)}`).toBe(0);
    expect(JSON.parse(rerun.stdout).files).toMatchObject({ repaired: 1, failed: 0 });
    expect(sha256(await fs.readFile(target))).toBe(sha256(bigFile));
  });

  it(
    "paces itself under 60 requests a minute (no 429), and waits out Retry-After when a 429 is forced",
    { timeout: 240_000 },
    async () => {
      // Another client of the forced account uses up its minute first, within one fixed window.
      await startOfAFixedWindow();
      for (let i = 0; i < 60; i++) {
        const answer = await fetch(`${server.url}/api/v1/orders`, {
          headers: { Authorization: `Bearer ${accounts.forced.key}` },
        });
        expect(answer.status).toBe(200);
      }
      const [paced, forced] = await Promise.all([
        runCli(["sync", "--dir", path.join(workDir, "paced"), "--json"], cliEnv(accounts.paced.key)),
        runCli(["sync", "--dir", path.join(workDir, "forced"), "--json"], cliEnv(accounts.forced.key)),
      ]);
      expect(paced.code, `${paced.stderr}\n${paced.stdout.slice(0, 3000)}`).toBe(0);
      // 66 requests (a list and 65 links) in a 60-a-minute window: it waited instead of meeting a 429.
      expect(JSON.parse(paced.stdout)).toMatchObject({
        files: { downloaded: 65, failed: 0 },
        rate_limited_responses: 0,
      });
      expect(forced.code, `${forced.stderr}\n${forced.stdout.slice(0, 3000)}`).toBe(0);
      const forcedReport = JSON.parse(forced.stdout);
      expect(forcedReport.rate_limited_responses).toBeGreaterThanOrEqual(1);
      expect(forcedReport.files).toMatchObject({ downloaded: 1, failed: 0 });
    },
  );

  it("reports a refunded order and keeps its files, unless --delete", async () => {
    const dir = path.join(workDir, "paced");
    const [orderDir] = (await fs.readdir(dir)).filter((name) => name.startsWith("ord_"));
    await setOrderStatus(orderDir!, "refunded");
    const kept = await runCli(["sync", "--dir", dir, "--json"], cliEnv(accounts.paced.key));
    expect(JSON.parse(kept.stdout).refunded).toEqual([{ id: orderDir, name: "paced", action: "kept" }]);
    expect((await fs.readdir(path.join(dir, orderDir!))).length).toBe(65);
    // --delete removes the 65 files the manifest says the sync wrote, then the directory, empty now.
    const deleted = await runCli(["sync", "--dir", dir, "--delete", "--json"], cliEnv(accounts.paced.key));
    const [refunded] = JSON.parse(deleted.stdout).refunded;
    expect(refunded).toMatchObject({ id: orderDir, name: "paced", action: "deleted", left: [] });
    expect(refunded.deleted).toHaveLength(65);
    await expect(fs.stat(path.join(dir, orderDir!))).rejects.toThrow();
  });

  it("exits 3 with the problem's code and request id when the API refuses, and 2 on bad usage", async () => {
    const refused = await runCli(["orders"], cliEnv(`dak_${"A".repeat(32)}`));
    expect(refused.code).toBe(3);
    expect(refused.stderr).toMatch(/^The API refused: (invalid_api_key|missing_api_key): .+ \(request [\w-]+\)/);
    const usage = await runCli(["sync"], cliEnv(accounts.bulk.key));
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("sync needs --dir D.");
  });
});
