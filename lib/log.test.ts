import { spawn } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The app server's batched log (lib/log.ts batchLogWrites): a line must still reach stdout while
 * the process lives on quietly, and every line must be out when the process exits, also at once
 * after logging (a fatal start-up error).
 */
function runLogging(script: string): Promise<{ lines: { msg: string; at: number }[]; code: number | null }> {
  const logModule = path.resolve("lib/log.ts");
  const child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      "--input-type=module",
      "-e",
      `const log = await import(${JSON.stringify(logModule)});\n${script}`,
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const started = Date.now();
  const lines: { msg: string; at: number }[] = [];
  let buffered = "";
  child.stdout.on("data", (chunk: Buffer) => {
    buffered += chunk;
    const complete = buffered.split("\n");
    buffered = complete.pop()!;
    for (const line of complete)
      lines.push({ msg: (JSON.parse(line) as { msg: string }).msg, at: Date.now() - started });
  });
  return new Promise((resolve) => child.once("close", (code) => resolve({ lines, code })));
}

describe("batched log writes", () => {
  it("writes a quiet server's line within its flush interval, not only when the process ends", async () => {
    const { lines, code } = await runLogging(
      `log.batchLogWrites(); log.logger().info("first"); setTimeout(() => process.exit(0), 3000);`,
    );
    expect(code).toBe(0);
    expect(lines.map((line) => line.msg)).toEqual(["first"]);
    expect(lines[0]!.at).toBeLessThan(2500);
  });

  it("loses no line when the process exits right after logging", async () => {
    const { lines, code } = await runLogging(
      `log.batchLogWrites(); for (let i = 0; i < 1000; i++) log.logger().info("line " + i); log.logger().fatal("bye"); process.exit(1);`,
    );
    expect(code).toBe(1);
    expect(lines).toHaveLength(1001);
    expect(lines.at(-1)!.msg).toBe("bye");
  });
});
