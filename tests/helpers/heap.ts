import v8 from "node:v8";
import vm from "node:vm";

/**
 * The V8 heap in use after a full garbage collection: what live objects cost, not RSS (which
 * keeps pages the allocator has not given back). `gc` is exposed without `--expose-gc` on the
 * command line: the flag is set at run time and the function taken from a fresh context.
 */
let gc: (() => void) | undefined;

export function collectGarbage(): void {
  if (!gc) {
    v8.setFlagsFromString("--expose-gc");
    gc = vm.runInNewContext("gc") as () => void;
  }
  // Twice: the first pass may leave objects whose finalizers free more.
  gc();
  gc();
}

/** heapUsed in bytes after a full collection. */
export function heapUsedAfterGc(): number {
  collectGarbage();
  return process.memoryUsage().heapUsed;
}

/** A buyer id as the database makes them (`usr_` + 32 hex digits), a fresh string each call. */
export function buyerIdFor(index: number): string {
  return `usr_${index.toString(16).padStart(32, "0")}`;
}

/**
 * What the in-process rate limiter's store costs on the heap: `accounts` distinct buyer ids each
 * checked once within one window (ids made one at a time and not kept elsewhere, as in the
 * server), then one check two windows later, when their counts can no longer matter. Bytes above
 * the store's empty state, after a full collection each time.
 */
export function limiterHeap(
  store: { check(identifier: string, now?: number): unknown },
  { accounts, windowMs }: { accounts: number; windowMs: number },
): { accounts: number; idleBytes: number; filledBytes: number; afterTwoWindowsBytes: number; bytesPerAccount: number } {
  const start = Math.floor(1_800_000_000_000 / windowMs) * windowMs + 1;
  store.check("warm-up", start);
  const idle = heapUsedAfterGc();
  for (let i = 0; i < accounts; i++) store.check(buyerIdFor(i), start + (i % (windowMs - 2)));
  const filled = heapUsedAfterGc();
  store.check("warm-up", start + 2 * windowMs);
  const after = heapUsedAfterGc();
  return {
    accounts,
    idleBytes: idle,
    filledBytes: filled - idle,
    afterTwoWindowsBytes: after - idle,
    bytesPerAccount: (filled - idle) / accounts,
  };
}
