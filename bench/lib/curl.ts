import { spawn, spawnSync } from "node:child_process";

/**
 * Downloads by curl, a process of its own (so its CPU is not the server's), for the download
 * benchmarks.
 */
export type Curl = { status: number; redirects: number; bytes: number; seconds: number };

export function requireCurl(script: string): void {
  if (spawnSync("curl", ["--version"]).status !== 0) {
    console.error(`${script} needs curl on PATH (the client runs in a process of its own).`);
    process.exit(1);
  }
}

/** One download by curl (its own process), body discarded. */
export function curl(url: string, headers: string[] = []): Promise<Curl> {
  return new Promise((resolve, reject) => {
    const args = ["-sS", "-L", "-o", "/dev/null", "-w", "%{http_code} %{num_redirects} %{size_download} %{time_total}"];
    for (const header of headers) args.push("-H", header);
    const child = spawn("curl", [...args, url], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (chunk) => (out += chunk));
    child.once("error", reject);
    child.once("exit", (code) => {
      const [status, redirects, bytes, seconds] = out.trim().split(" ").map(Number);
      if (code !== 0) return reject(new Error(`curl exited ${code}`));
      resolve({ status: status!, redirects: redirects!, bytes: bytes!, seconds: seconds! });
    });
  });
}

export const mibPerSecond = (run: Curl) => run.bytes / 1024 / 1024 / run.seconds;
