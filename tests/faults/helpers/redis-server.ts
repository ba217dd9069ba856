import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { freePort } from "../../helpers/server";

/**
 * A Redis of the test's own (`redis-server` from PATH) on a free loopback port, to kill and
 * restart; never the machine's shared Redis, which other tests use. Nothing is persisted
 * (`--save ""`, no AOF), so a restarted server starts empty, as a replaced Redis node would.
 */
export type TestRedisServer = {
  url: string;
  /** SIGKILL (a crash: open connections are reset), resolved once the process is gone. */
  kill: () => Promise<void>;
  /** Starts it again on the same port (after a SIGKILL if it still runs), empty; resolved once it accepts connections. */
  restart: () => Promise<void>;
  /** Stops it (SIGTERM) if it runs. */
  stop: () => Promise<void>;
};

const READY_WITHIN_MS = 15_000;

export async function startRedisServer(): Promise<TestRedisServer> {
  const port = await freePort();
  let child: ChildProcess | undefined = await launch(port);
  const end = async (signal: NodeJS.Signals) => {
    const running = child;
    child = undefined;
    if (running) await terminate(running, signal);
  };
  return {
    url: `redis://127.0.0.1:${port}`,
    kill: () => end("SIGKILL"),
    restart: async () => {
      await end("SIGKILL");
      child = await launch(port);
    },
    stop: () => end("SIGTERM"),
  };
}

async function launch(port: number): Promise<ChildProcess> {
  const child = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  child.stderr!.on("data", (chunk) => (output += chunk));
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`redis-server did not start within ${READY_WITHIN_MS} ms`)),
        READY_WITHIN_MS,
      );
      child.once("error", reject);
      child.once("exit", (code) => reject(new Error(`redis-server exited (${code})`)));
      createInterface({ input: child.stdout! }).on("line", (line) => {
        output += `${line}\n`;
        if (line.includes("Ready to accept connections")) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
  } catch (error) {
    await terminate(child, "SIGKILL");
    throw new Error(`${(error as Error).message} on port ${port}:\n${output}`);
  }
  return child;
}

function terminate(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once("exit", () => resolve());
    child.kill(signal);
  });
}
