import { createHash } from "node:crypto";

/** The two calls the adapter makes, with ioredis's argument order. */
export type LuaClient = {
  evalsha(sha: string, numKeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
  eval(script: string, numKeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
};

/**
 * What @upstash/ratelimit 2.2 calls on its `redis` option for the sliding window: `safeEval` in its dist runs
 * `evalsha(hash, keys, args)` and, when the error mentions NOSCRIPT, `eval(script, keys, args)`. Nothing else.
 */
export type UpstashScripts = {
  evalsha(sha: string, keys: string[], args: (string | number)[]): Promise<unknown>;
  eval(script: string, keys: string[], args: (string | number)[]): Promise<unknown>;
};

// The library's scripts start with `#!lua flags=allow-key-locking`, a flag only Upstash's server knows: Redis 7
// answers "ERR Unexpected flag in script shebang". Without a shebang the script runs as a plain EVAL script,
// which is atomic on Redis anyway.
const SHEBANG = /^#![^\n]*\n/;

const sha1 = (text: string) => createHash("sha1").update(text).digest("hex");

/**
 * Adapts an ioredis-style client to the Upstash signatures `(script | sha, keys[], args[])`. The sliding-window
 * scripts reply with arrays of integers, which ioredis already returns as numbers, so replies pass through as they are.
 * `ready` delays calls until the client has made its first connection attempt.
 */
export function upstashScriptAdapter(client: LuaClient, ready: Promise<void> = Promise.resolve()): UpstashScripts {
  // The library's hash names the script with its shebang, which the server never sees; map it to what was sent.
  const sentAs = new Map<string, string>();
  return {
    async evalsha(sha, keys, args) {
      const sent = sentAs.get(sha);
      // Locally known to be missing: the library then calls eval with the script text, saving a round trip.
      if (sent === undefined) throw new Error("NOSCRIPT script not sent through this adapter yet");
      await ready;
      return client.evalsha(sent, keys.length, ...keys, ...args);
    },
    async eval(script, keys, args) {
      const stripped = script.replace(SHEBANG, "");
      sentAs.set(sha1(script), sha1(stripped));
      await ready;
      // EVAL also caches the script on the server, so the next evalsha finds it (a server that lost it answers
      // NOSCRIPT, and the library comes back here).
      return client.eval(stripped, keys.length, ...keys, ...args);
    },
  };
}
