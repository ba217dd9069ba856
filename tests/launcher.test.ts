import { spawn } from "node:child_process";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createTestEnvironment } from "./helpers/database";
import { freePort, startServer } from "./helpers/server";

/** Runs `npm start` (scripts/serve.ts built, start) and waits for it to exit; a launcher still running after 30 s is killed. */
async function startExpectingExit(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [path.resolve("scripts/built.mjs"), "serve", "start"], {
    env: {
      ...process.env,
      NODE_ENV: "production",
      // Unreachable on purpose: a refused secret must stop the launcher before it touches the database.
      DATABASE_URL: "postgresql://postgres@127.0.0.1:9/unreachable",
      PORT: String(await freePort()),
      AUTH_SECRET: "",
      NEXTAUTH_SECRET: "",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (chunk) => (output += chunk));
  child.stderr.on("data", (chunk) => (output += chunk));
  const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  const code = await new Promise<number | null>((resolve) => child.once("exit", (exitCode) => resolve(exitCode)));
  clearTimeout(timer);
  return { code, output };
}

describe("npm start", () => {
  it.each([
    { variable: "AUTH_SECRET", value: "too-short-a-secret" },
    { variable: "NEXTAUTH_SECRET", value: "x".repeat(31) },
  ])("refuses a $variable shorter than 32 characters, with a clear message", async ({ variable, value }) => {
    const { code, output } = await startExpectingExit({ [variable]: value });
    expect(code).toBe(1);
    expect(output).toContain(
      `${variable} is too short (${value.length} characters): it must be at least 32 characters`,
    );
    expect(output).not.toContain(value);
  });

  it("creates its data directory and the secret it generates readable by its user only", async () => {
    const env = await createTestEnvironment("launcher");
    const dataDir = path.join(env.storageDir, "data");
    try {
      const server = await startServer({
        databaseUrl: env.database.url,
        storageDir: env.storageDir,
        env: { AUTH_SECRET: "", DATA_DIR: dataDir },
      });
      await server.stop();
      const mode = async (file: string) => (await fs.stat(file)).mode & 0o777;
      // As root 0711: the embedded PostgreSQL's user passes through it to its cluster, without listing it.
      expect(await mode(dataDir)).toBe(os.userInfo().uid === 0 ? 0o711 : 0o700);
      expect(await mode(path.join(dataDir, "auth-secret"))).toBe(0o600);
    } finally {
      await env.cleanup();
    }
  });
});
