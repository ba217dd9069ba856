import { execFile, spawn, type ChildProcess } from "node:child_process";
import { promises as fs } from "node:fs";
import { promisify } from "node:util";
import path from "node:path";
import { newestSourceTime } from "../../lib/clients/typescript-package";

/**
 * Builds clients/typescript to dist/ with its own tsconfig, as `npm run client:build` does, unless
 * dist/ is newer than every source. The tests' global setup builds it once per run, so the test
 * files that run the command (two at a time) neither compile it again nor rewrite it under each other.
 */
export async function buildTypeScriptClient(): Promise<void> {
  if (await clientBuildIsFresh()) return;
  await promisify(execFile)(process.execPath, [
    path.resolve("node_modules/typescript/bin/tsc"),
    "-p",
    "clients/typescript",
  ]);
}

async function clientBuildIsFresh(): Promise<boolean> {
  const built = await fs.stat(CLI).catch(() => undefined);
  return built !== undefined && (await newestSourceTime()) < built.mtimeMs;
}

export const CLI = path.resolve("clients/typescript/dist/cli.js");

export type CliRun = { code: number | null; stdout: string; stderr: string };

/** Runs the built `dataset-access` command to its end. */
export function runCli(args: string[], env: Record<string, string>): Promise<CliRun> {
  return finished(startCli(args, env));
}

export function startCli(args: string[], env: Record<string, string>): ChildProcess & { output: CliRun } {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  }) as ChildProcess & { output: CliRun };
  child.output = { code: null, stdout: "", stderr: "" };
  child.stdout?.on("data", (chunk) => (child.output.stdout += chunk));
  child.stderr?.on("data", (chunk) => (child.output.stderr += chunk));
  return child;
}

export function finished(child: ChildProcess & { output: CliRun }): Promise<CliRun> {
  return new Promise((resolve) =>
    child.once("exit", (code) => {
      child.output.code = code;
      resolve(child.output);
    }),
  );
}

/** Runs the built command inside a pseudo-terminal (python's pty): `stdout` is what a person sees, stderr included. */
export function runCliOnTerminal(args: string[], env: Record<string, string>): Promise<CliRun> {
  const pty = "import os, pty, sys; sys.exit(os.waitstatus_to_exitcode(pty.spawn(sys.argv[1:])))";
  const child = spawn("python3", ["-c", pty, process.execPath, CLI, ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  }) as ChildProcess & { output: CliRun };
  child.output = { code: null, stdout: "", stderr: "" };
  child.stdout?.on("data", (chunk) => (child.output.stdout += chunk));
  child.stderr?.on("data", (chunk) => (child.output.stderr += chunk));
  return finished(child);
}
