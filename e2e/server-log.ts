import { readFileSync, statSync } from "node:fs";
import path from "node:path";

/** Where global-setup writes the output of the server the tests talk to (outside Playwright's outputDir, which it empties). */
export const E2E_SERVER_LOG = path.resolve("test-results/e2e-server.log");

export function serverLogSize(): number {
  try {
    return statSync(E2E_SERVER_LOG).size;
  } catch {
    return 0;
  }
}

/** What the server logged from byte `from` on: printed when a test fails, so CI's output names the cause. */
export function serverLogSince(from: number): string {
  try {
    return readFileSync(E2E_SERVER_LOG).subarray(from).toString("utf8");
  } catch {
    return "";
  }
}
