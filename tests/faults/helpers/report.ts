import { promises as fs } from "node:fs";
import path from "node:path";

/** Where every scenario's figures are collected, one JSON object a line, across runs. */
export const REPORT_FILE = path.resolve("test-results/faults/report.jsonl");

/**
 * Reports what a fault cost: one `FAULT-REPORT <json>` line in the test output and the same JSON
 * appended to REPORT_FILE. Called before the scenario's assertions, so a failing run reports too.
 */
export async function reportFault(scenario: string, figures: Record<string, unknown>): Promise<void> {
  const line = JSON.stringify({ scenario, at: new Date().toISOString(), ...figures });
  console.log(`FAULT-REPORT ${line}`);
  await fs.mkdir(path.dirname(REPORT_FILE), { recursive: true });
  await fs.appendFile(REPORT_FILE, `${line}\n`);
}

/** How often each value occurs, e.g. `{"200": 180, "503": 20}`. */
export function tally(values: (string | number)[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}

/**
 * What went wrong with a request that got no answer: the socket error's code (ECONNRESET, ...; for
 * fetch, that of its cause) or the error's name (TimeoutError).
 */
export function errorCode(error: unknown): string {
  for (const candidate of [error, (error as { cause?: unknown }).cause]) {
    const code = (candidate as { code?: unknown } | undefined)?.code;
    if (typeof code === "string") return code;
  }
  return (error as Error).name ?? String(error);
}
