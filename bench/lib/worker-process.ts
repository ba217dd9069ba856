import type { ChildProcess } from "node:child_process";
import { sleep } from "./common";

/**
 * The job worker (`npm run worker`) in a process of its own, as production runs it beside web instances
 * started with JOBS_WORKER=off. `spawnWorker` starts it (the caller chooses the command line: a CPU share,
 * nice, its environment); this waits until it says it started (or exits, or 120 s pass).
 */
export async function startWorkerProcess(spawnWorker: () => ChildProcess): Promise<ChildProcess> {
  const worker = spawnWorker();
  let output = "";
  worker.stdout!.on("data", (chunk) => (output = (output + chunk).slice(-20_000)));
  worker.stderr!.on("data", (chunk) => (output = (output + chunk).slice(-20_000)));
  for (let waited = 0; !output.includes("Job worker started"); waited += 100) {
    if (worker.exitCode !== null || waited > 120_000) throw new Error(`The worker did not start:\n${output}`);
    await sleep(100);
  }
  return worker;
}

/** SIGTERM (the worker ends after the jobs in hand), then waits for it to exit. */
export async function stopWorkerProcess(worker: ChildProcess): Promise<void> {
  if (worker.exitCode !== null) return;
  const exited = new Promise((resolve) => worker.once("exit", resolve));
  worker.kill("SIGTERM");
  await exited;
}
