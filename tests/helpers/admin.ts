import { execFile } from "node:child_process";

export type AdminResult = { code: number; stdout: string; stderr: string };

/** Runs the operator CLI (`npm run admin -- ...`) as an operator would, with `env` over this process's. */
export function runAdmin(env: Record<string, string | undefined>, ...args: string[]): Promise<AdminResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ["scripts/built.mjs", "admin", ...args],
      { env: { ...process.env, ...env }, maxBuffer: 10 * 1024 * 1024 },
      (error, stdout, stderr) =>
        resolve({ code: error ? ((error.code as number | undefined) ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** The CLI's `--json` answer of a command that must succeed. */
export async function runAdminJson<T = Record<string, unknown>>(
  env: Record<string, string | undefined>,
  ...args: string[]
): Promise<T> {
  const result = await runAdmin(env, ...args, "--json");
  if (result.code !== 0 || result.stderr !== "") {
    throw new Error(`admin ${args.join(" ")} exited ${result.code}:\n${result.stderr}${result.stdout}`);
  }
  return JSON.parse(result.stdout) as T;
}
