import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import net from "node:net";
import path from "node:path";
import { waitFor } from "./wait";

export const TEST_AUTH_SECRET = "test-secret-0123456789abcdefghijklmnopqrstuvwxyz";

export type TestServer = {
  url: string;
  stop: () => Promise<void>;
  output: () => string;
  /**
   * The output once everything logged before this call has been written: the server writes its
   * log in batches (lib/log.ts), so a line can reach the output up to a quarter second late.
   */
  loggedSoFar: () => Promise<string>;
  /** The launcher's pid (scripts/serve.ts, built); the HTTP server is its child (tests/faults/helpers/processes.ts signals both). */
  pid?: number;
};

let outputCopy: ((chunk: Buffer) => void) | undefined;

/** Where every server started from now on also writes its output (the test file's log: tests/helpers/test-log.ts). */
export function copyServerOutputTo(sink: (chunk: Buffer) => void): void {
  outputCopy = sink;
}

/**
 * Starts the production server the way users do (`npm start`: scripts/serve.ts built)
 * on a free port, against the given database, and waits until `readyPath` answers. `mode: "dev"`
 * starts the development server instead (`npm run dev`: Next.js compiling on demand, in .next/dev).
 */
export async function startServer(options: {
  databaseUrl: string;
  storageDir: string;
  env?: Record<string, string>;
  readyPath?: string;
  /** Set APP_URL (and so NEXTAUTH_URL) to the server's own address, for e-mailed links. */
  withAppUrl?: boolean;
  mode?: "start" | "dev";
}): Promise<TestServer> {
  const mode = options.mode ?? "start";
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  // As the npm scripts run it: `npm start` built (scripts/built.mjs), `npm run dev` from source.
  const launcher =
    mode === "start"
      ? [path.resolve("scripts/built.mjs"), "serve"]
      : ["--import", "tsx", path.resolve("scripts/serve.ts")];
  const child = spawn(process.execPath, [...launcher, mode], {
    env: {
      ...process.env,
      // As `npm start` (or `npm run dev`) runs it: the test runner's NODE_ENV=test must not reach the server.
      NODE_ENV: mode === "start" ? "production" : "development",
      DATABASE_URL: options.databaseUrl,
      STORAGE_DIR: options.storageDir,
      AUTH_SECRET: TEST_AUTH_SECRET,
      MIGRATE_ON_START: "false",
      PORT: String(port),
      ...(options.withAppUrl ? { APP_URL: url } : {}),
      ...options.env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const record = (chunk: Buffer) => {
    output += chunk;
    outputCopy?.(chunk);
  };
  child.stdout?.on("data", record);
  child.stderr?.on("data", record);
  // The development server compiles each route on its first request.
  await waitUntilReady(
    `${url}${options.readyPath ?? "/api/health"}`,
    child,
    () => output,
    mode === "dev" ? 180_000 : 60_000,
  );
  const loggedSoFar = async () => {
    // Lines are written in order: once a request made now is in the output, so is all before it.
    const marker = randomUUID();
    await fetch(`${url}/api/health`, { headers: { "X-Request-Id": marker } }).then((response) =>
      response.arrayBuffer(),
    );
    await waitFor(() => output.includes(marker), 5_000, `the server's log to show request ${marker}`);
    return output;
  };
  return { url, stop: () => stop(child), output: () => output, loggedSoFar, pid: child.pid };
}

async function waitUntilReady(url: string, child: ChildProcess, output: () => string, withinMs: number): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`The server exited (${child.exitCode}):\n${output()}`);
    const ok = await fetch(url).then(
      (response) => response.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  child.kill("SIGKILL");
  throw new Error(`The server did not answer ${url} within ${withinMs / 1000} s:\n${output()}`);
}

function stop(child: ChildProcess): Promise<void> {
  // Ended already: on its own (exitCode) or killed by a test (signalCode).
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once("exit", () => resolve());
    child.kill("SIGTERM");
  });
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
