import type { Ratelimit } from "@upstash/ratelimit";
import { Redis as UpstashRedis } from "@upstash/redis";
import IORedis from "ioredis";
import { processSingleton } from "../singleton";
import { upstashScriptAdapter, type UpstashScripts } from "./script-adapter";

export type Env = Record<string, string | undefined>;

/** The library's `redis` option type: it asks for `evalsha`, `get` and `set` of @upstash/redis. */
export type RatelimitRedis = ConstructorParameters<typeof Ratelimit>[0]["redis"];

/**
 * A shared store. `connect` runs on a limiter's first check, so importing a route opens no connection (e.g. at
 * build); there is one connection per store and process, whatever the number of limiters.
 */
export type RemoteBackend = { kind: "upstash" | "redis"; label: string; connect: () => RatelimitRedis };

/** Upstash when both of its variables are set, else a plain Redis when REDIS_URL is set, else none (in-process). */
export function remoteBackend(env: Env): RemoteBackend | undefined {
  const { UPSTASH_REDIS_REST_URL: url, UPSTASH_REDIS_REST_TOKEN: token, REDIS_URL: redisUrl } = env;
  if (url && token) {
    return {
      kind: "upstash",
      label: "Upstash Redis",
      connect: () => processSingleton(`ratelimit:store:upstash ${url}`, () => new UpstashRedis({ url, token })),
    };
  }
  if (redisUrl)
    return {
      kind: "redis",
      label: "Redis",
      connect: () => processSingleton(`ratelimit:store:redis ${redisUrl}`, () => plainRedis(redisUrl)),
    };
  return undefined;
}

// The library's type demands `get`/`set` (used only by dynamic limits, which we leave off) and omits `eval`
// (which it does call after NOSCRIPT); the adapter provides exactly what the sliding window runs.
const asRatelimitRedis = (scripts: UpstashScripts) => scripts as unknown as RatelimitRedis;

function plainRedis(url: string): RatelimitRedis {
  const client = new IORedis(url, {
    connectTimeout: 1000,
    // Fail fast instead of queueing while disconnected: the limiter then answers from its in-process fallback.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    // A Redis that accepted the connection but stopped answering must not pile up commands.
    commandTimeout: 1000,
    // Checks made in the same tick (concurrent requests) go out in one write: fewer system calls per check.
    enableAutoPipelining: true,
  });
  // Failures reach the limiter as rejected commands and it logs them (throttled); without a listener ioredis would
  // print every reconnection error.
  client.on("error", () => {});
  // With the offline queue off, commands sent during the very first connect would fail, so they wait for its outcome.
  const firstAttempt = new Promise<void>((resolve) => {
    client.once("ready", resolve);
    client.once("close", resolve);
  });
  return asRatelimitRedis(upstashScriptAdapter(client, firstAttempt));
}
