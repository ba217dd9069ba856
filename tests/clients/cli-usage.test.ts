import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { buildTypeScriptClient, runCli } from "./cli";

/**
 * Both commands, `dataset-access` and `python3 dataset_access.py`, refuse a command line they
 * cannot run the same way: one line saying what is wrong, then one usage line, exit code 2, never
 * a stack trace; `--version` and `-V` print the version. Nothing here reaches a server.
 */
const PYTHON_CLI = path.resolve("clients/python/dataset_access.py");
const SETTINGS = { DATASET_ACCESS_URL: "http://127.0.0.1:9", DATASET_ACCESS_KEY: "dak_test" };

type Run = { code: number | null; stdout: string; stderr: string };

async function runPython(args: string[], env: Record<string, string>): Promise<Run> {
  const result = await promisify(execFile)("python3", [PYTHON_CLI, ...args], { env: { ...process.env, ...env } }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => error,
  );
  return { code: result.code, stdout: result.stdout, stderr: result.stderr };
}

const CLIS = [
  { name: "dataset-access", run: runCli, usage: /^Usage: dataset-access <command> \[options\]/ },
  { name: "dataset_access.py", run: runPython, usage: /^Usage: dataset_access\.py <command> \[options\]/ },
] as const;

beforeAll(() => buildTypeScriptClient(), 120_000);

describe.each(CLIS)("$name", ({ name, run, usage }) => {
  it.each(["--version", "-V"])("%s prints the version", async (flag) => {
    const result = await run([flag], {});
    expect(result).toMatchObject({ code: 0, stderr: "" });
    expect(result.stdout).toBe(`${name} 0.1.0\n`);
  });

  const noUrl = { ...SETTINGS, DATASET_ACCESS_URL: "" };
  const noKey = { ...SETTINGS, DATASET_ACCESS_KEY: "" };
  it.each([
    ["an unknown option", ["orders", "--bogus"], SETTINGS, /--bogus/],
    [
      "an option without its value",
      ["quality", "--order", "ord_x", "--table", "t", "--version"],
      SETTINGS,
      /--version/,
    ],
    ["an unknown command", ["frob"], SETTINGS, /frob/],
    ["a bad number", ["rows", "--order", "ord_x", "--table", "t", "--offset", "-1"], SETTINGS, /offset/],
    ["a limit out of range", ["sql", "--order", "ord_x", "--query", "SELECT 1", "--limit", "0"], SETTINGS, /--limit/],
    ["rows without --table", ["rows", "--order", "ord_x"], SETTINGS, /rows needs --order ID --table NAME\./],
    [
      "contract without --table",
      ["contract", "--order", "ord_x"],
      SETTINGS,
      /contract needs --order ID --table NAME\./,
    ],
    ["sql without --query", ["sql", "--order", "ord_x"], SETTINGS, /sql needs --order ID --query/],
    ["no server", ["orders"], noUrl, /^No server URL: set DATASET_ACCESS_URL to the site's address/],
    ["no key", ["orders"], noKey, /^No API key: set DATASET_ACCESS_KEY to an API key with datasets:read\.$/],
  ] as const)("refuses %s in one line, the usage line, exit 2", async (_, args, env, message) => {
    const result = await run([...args], env);
    expect(result.code, result.stderr).toBe(2);
    const lines = result.stderr.trimEnd().split("\n");
    expect(lines, result.stderr).toHaveLength(2);
    expect(lines[0]).toMatch(message);
    expect(lines[1]).toMatch(usage);
    expect(result.stderr).not.toMatch(/\n\s+at |Traceback|ERR_PARSE_ARGS|pass api_?key/i);
    expect(result.stdout).toBe("");
  });
});
