import net from "node:net";
import { performance } from "node:perf_hooks";
import IORedis from "ioredis";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi, type MockInstance } from "vitest";
import { LIMIT, countAllowed, freezeTime, limiterFor, slidingWindowBehaviour, uniquePrefix } from "./helpers";
import type { Logger } from "pino";
import { logger } from "@/lib/log";
import { needingRedis } from "@/tests/helpers/rate-limit";

const redisUrl = process.env.REDIS_URL;

// The only allowed skip: no REDIS_URL. With it set, an unreachable Redis fails every test, and
// a check answered by the in-process fallback instead of Redis fails the test (it logs a warning).
describe.skipIf(!redisUrl)(needingRedis("plain Redis (REDIS_URL)"), () => {
  const env = { REDIS_URL: redisUrl };
  let admin: IORedis;
  let warn: MockInstance<Logger["warn"]>;
  let unreachable: Error | undefined;

  beforeAll(async () => {
    admin = new IORedis(redisUrl!, { lazyConnect: true, connectTimeout: 2000, retryStrategy: () => null });
    let cause: Error | undefined; // the socket error; connect() only rejects with "Connection is closed"
    admin.on("error", (error: Error) => (cause ??= error));
    unreachable = await admin.connect().then(
      () => undefined,
      (error: Error) => cause ?? error,
    );
  });
  afterAll(async () => {
    if (admin.status === "ready") {
      const keys = await admin.keys("test:ratelimit:*");
      if (keys.length > 0) await admin.del(...keys);
    }
    admin.disconnect();
  });
  beforeEach(() => {
    // Thrown here, every test fails (a failing beforeAll would only report them as skipped).
    if (unreachable) throw new Error(`REDIS_URL is set but Redis is unreachable (${unreachable.message}).`);
    warn = vi.spyOn(logger(), "warn");
  });
  afterEach(() => {
    if (!unreachable) expect(warn).not.toHaveBeenCalled();
    vi.restoreAllMocks();
    vi.useRealTimers();
  });

  slidingWindowBehaviour(() => env);

  it("keeps its counts in Redis", async () => {
    const prefix = uniquePrefix();
    await limiterFor(env, prefix).check("buyer");
    const keys = await admin.keys(`${prefix}:*`);
    expect(keys).toHaveLength(1);
    expect(await admin.get(keys[0]!)).toBe("1");
  });

  it("two limiters with their own connections, as two server processes, share one limit", async () => {
    freezeTime(10_000);
    const prefix = uniquePrefix();
    const first = limiterFor(env, prefix);
    const second = limiterFor(env, prefix);
    // Both ask at once, 60 each: together they get 60, not 120.
    const allowed = await Promise.all([countAllowed(first, "buyer", LIMIT), countAllowed(second, "buyer", LIMIT)]);
    expect(allowed[0]! + allowed[1]!).toBe(LIMIT);
    expect(allowed[0]).toBeGreaterThan(0);
    expect(allowed[1]).toBeGreaterThan(0);
    expect(await first.check("buyer")).toMatchObject({ allowed: false, remaining: 0 });
    expect(await second.check("buyer")).toMatchObject({ allowed: false, remaining: 0 });
  });

  it("during an outage limits per instance, and goes back to Redis as soon as it answers", async () => {
    const proxy = await cuttableProxy(new URL(redisUrl!));
    const info = vi.spyOn(logger(), "info").mockImplementation(() => {});
    try {
      freezeTime(10_000);
      const prefix = uniquePrefix();
      const limiter = limiterFor({ REDIS_URL: proxy.url }, prefix);
      await limiter.check("buyer");

      proxy.cut();
      warn.mockImplementation(() => {});
      const start = performance.now();
      expect(await countAllowed(limiter, "buyer", LIMIT + 1)).toBe(LIMIT);
      expect(performance.now() - start).toBeLessThan(1500);
      expect(warn).toHaveBeenCalledTimes(1);
      expect(await admin.get(`${prefix}:buyer:${Math.floor(Date.now() / 60_000)}`)).toBe("1");

      proxy.restore();
      // ioredis reconnects on its own schedule (at most 2 s apart); the first check after that uses Redis again.
      await vi.waitFor(
        async () => {
          await limiter.check("buyer");
          expect(info).toHaveBeenCalledWith("Rate limiter: Redis answers again; limits are shared again.");
        },
        { timeout: 5000, interval: 100 },
      );
      expect(await admin.get(`${prefix}:buyer:${Math.floor(Date.now() / 60_000)}`)).toBe("2");
      warn.mockClear(); // the outage's warning was expected
    } finally {
      proxy.cut();
      await proxy.close();
    }
  });
});

/** A TCP proxy to Redis that can be cut (connections reset) and restored, to stage an outage. */
async function cuttableProxy(target: URL) {
  let up = true;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    if (!up) return client.destroy();
    const upstream = net.connect(Number(target.port || 6379), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("error", () => {});
      socket.on("close", () => sockets.delete(socket));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `redis://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    cut() {
      up = false;
      for (const socket of sockets) socket.destroy();
    },
    restore() {
      up = true;
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}
