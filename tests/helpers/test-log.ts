import { appendFileSync, mkdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { beforeEach, expect, inject } from "vitest";
import { logToFile } from "../../lib/log";
import { copyServerOutputTo } from "./server";

/**
 * A setup file (vitest.config.ts): what a test file's own process logs (lib/log.ts) and the output of the servers it
 * starts (tests/helpers/server.ts) go to one file per test file under the run's log directory, and the part written
 * during a test is printed only when that test fails. Passing tests print nothing (issue #39: 171 raw JSON lines).
 */
const testFile = path.relative(process.cwd(), expect.getState().testPath ?? `pid-${process.pid}`);
const TEST_LOG_FILE = path.join(inject("testLogDir"), `${testFile.replace(/[\\/]/g, "__")}.log`);
mkdirSync(path.dirname(TEST_LOG_FILE), { recursive: true });
logToFile(TEST_LOG_FILE);

copyServerOutputTo((chunk) => appendFileSync(TEST_LOG_FILE, chunk));

const logSize = () => {
  try {
    return statSync(TEST_LOG_FILE).size;
  } catch {
    return 0;
  }
};

beforeEach(({ onTestFailed }) => {
  const from = logSize();
  onTestFailed(() => {
    let logged = "";
    try {
      logged = readFileSync(TEST_LOG_FILE).subarray(from).toString("utf8");
    } catch {
      // Nothing logged at all.
    }
    console.error(`The log while this test ran (all of this test file's: ${TEST_LOG_FILE}):\n${logged || "(empty)"}`);
  });
});
