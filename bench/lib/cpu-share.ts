import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import path from "node:path";

/**
 * A CPU share for processes the benchmark starts: the same thing as a systemd unit's `CPUWeight=`
 * (deploy/systemd), made without systemd. A cgroup v2 directory (`cpu.weight`, 1-10000, default
 * 100) where the cpu controller is on the unified hierarchy, else a cgroup v1 one under the `cpu`
 * controller (`cpu.shares`, weight × 1024 / 100, as systemd converts it). Needs root.
 * `wrap(command, args)` gives a command line that enters the group and then execs the command, so
 * the process and every child it starts (the engine processes) are in it from the start.
 */
export type CpuShare = {
  weight: number;
  kind: string;
  wrap: (command: string, args: string[]) => string[];
  remove: () => void;
};

const V2_ROOT = "/sys/fs/cgroup";
const V1_CPU = "/sys/fs/cgroup/cpu";

export function cpuShare(name: string, weight: number): CpuShare {
  if (!Number.isInteger(weight) || weight < 1 || weight > 10_000) throw new Error(`CPU weight 1-10000 (got ${weight})`);
  let dir: string;
  let kind: string;
  const v2Controllers = existsSync(`${V2_ROOT}/cgroup.controllers`)
    ? readFileSync(`${V2_ROOT}/cgroup.controllers`, "utf8")
    : "";
  if (/\bcpu\b/.test(v2Controllers)) {
    const subtree = readFileSync(`${V2_ROOT}/cgroup.subtree_control`, "utf8");
    if (!/\bcpu\b/.test(subtree)) writeFileSync(`${V2_ROOT}/cgroup.subtree_control`, "+cpu");
    dir = path.join(V2_ROOT, name);
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, "cpu.weight"), String(weight));
    kind = `cgroup v2 cpu.weight=${weight}`;
  } else if (existsSync(`${V1_CPU}/cpu.shares`)) {
    dir = path.join(V1_CPU, name);
    mkdirSync(dir, { recursive: true });
    const shares = Math.round((weight * 1024) / 100);
    writeFileSync(path.join(dir, "cpu.shares"), String(shares));
    kind = `cgroup v1 cpu.shares=${shares} (CPUWeight=${weight})`;
  } else {
    throw new Error("no cpu cgroup controller found (neither cgroup v2 with cpu nor v1 /sys/fs/cgroup/cpu)");
  }
  const procs = path.join(dir, "cgroup.procs");
  return {
    weight,
    kind,
    wrap: (command, args) => ["sh", "-c", `echo $$ > '${procs}' && exec "$@"`, "sh", command, ...args],
    // A group is removed once its processes have exited (rmdir of a group in use fails: then it stays).
    remove: () => {
      try {
        rmdirSync(dir);
      } catch {
        // still in use or already gone
      }
    },
  };
}

/** The scheduling group a process is in: its cpu cgroup and (for the root group) its autogroup. */
export function schedulingGroup(pid: number): string {
  const read = (file: string) => {
    try {
      return readFileSync(file, "utf8").trim();
    } catch {
      return "?";
    }
  };
  const lines = read(`/proc/${pid}/cgroup`).split("\n");
  const cgroup = lines.find((line) => /:(.*,)?cpu(,.*)?:/.test(line)) ?? lines.find((line) => line.startsWith("0::"));
  return `${cgroup ?? "?"} ${read(`/proc/${pid}/autogroup`)}`;
}
