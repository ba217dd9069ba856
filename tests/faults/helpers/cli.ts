import { spawn } from "node:child_process";
import path from "node:path";

/** The operator CLI under fault: run as operators run it, killed at seeded random points. */

/** A small seeded generator (mulberry32): the same kill points for the same seed. */
export function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export type CliRun = { code: number | null; killed: boolean; stdout: string; stderr: string; ms: number };

/** `npm run admin -- <args>` as the operator runs it, SIGKILLed after `killAfterMs` if still running. */
export function killableAdmin(
  args: string[],
  environment: Record<string, string>,
  killAfterMs?: number,
): Promise<CliRun> {
  const started = Date.now();
  const child = spawn(process.execPath, ["--import", "tsx", path.resolve("scripts/admin.ts"), ...args, "--json"], {
    env: { ...process.env, ...environment },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => (stdout += chunk));
  child.stderr.on("data", (chunk) => (stderr += chunk));
  let killed = false;
  const timer =
    killAfterMs === undefined
      ? undefined
      : setTimeout(() => {
          killed = child.kill("SIGKILL");
        }, killAfterMs);
  return new Promise((resolve) => {
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, killed: killed && code === null, stdout, stderr, ms: Date.now() - started });
    });
  });
}
