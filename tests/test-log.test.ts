import { execFile } from "node:child_process";
import { mkdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, expect, it } from "vitest";

/**
 * Issue #39: `npm test` printed 171 raw JSON log lines around passing tests. Runs vitest, as `npm test` does, on a
 * file with one passing and one failing test that both log: only the failing one's line is printed.
 */
const dir = path.resolve("test-results", `test-log-${process.pid}`);
afterAll(() => rm(dir, { recursive: true, force: true }));

it("prints the log of a failing test only", async () => {
  await mkdir(dir, { recursive: true });
  await writeFile(
    path.join(dir, "logging.test.ts"),
    `import { expect, it } from "vitest";
import { logger } from "../../lib/log";
it("passes", () => { logger().warn("logged by the passing test"); expect(1).toBe(1); });
it("fails", () => { logger().warn("logged by the failing test"); expect(1).toBe(2); });
`,
  );
  const config = path.join(dir, "vitest.config.ts");
  await writeFile(
    config,
    `import base from "../../vitest.config.ts";
const include = [${JSON.stringify(path.join(dir, "*.test.ts"))}];
// No database or build: only the log setup (tests/helpers/test-log.ts), given its directory here.
const provide = { testLogDir: ${JSON.stringify(path.join(dir, "logs"))} };
export default { ...base, test: { ...base.test, include, globalSetup: [], provide } };
`,
  );
  const run = await promisify(execFile)(
    process.execPath,
    ["node_modules/vitest/vitest.mjs", "run", "--config", config],
    {
      env: { ...process.env, NO_COLOR: "1" },
    },
  ).then(
    () => ({ stdout: "", stderr: "", failed: false }),
    (error: { stdout: string; stderr: string }) => ({ ...error, failed: true }),
  );
  const output = run.stdout + run.stderr;
  expect(run.failed).toBe(true);
  expect(output).toContain("1 failed | 1 passed");
  expect(output).toMatch(/The log while this test ran[^\n]*\n\{"level":"warn".*"msg":"logged by the failing test"\}/);
  expect(output).not.toContain(`"msg":"logged by the passing test"`);
});
