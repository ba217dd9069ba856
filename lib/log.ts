import pino, { type Logger } from "pino";
import { processSingleton } from "./singleton";

/**
 * The app's structured log: one JSON object per line on stdout (pino), with `level`, `time`
 * (ISO 8601) and `msg`. LOG_LEVEL sets the threshold (default info). Secrets never reach it:
 * nothing logs keys, tokens, signed URLs or sign-in links, and the redaction below is a second
 * line of defence should a header or a credential field ever be passed by mistake.
 */
export function logger(): Logger {
  return processSingleton("log", () =>
    pino(
      {
        level: process.env.LOG_LEVEL || "info",
        base: { pid: process.pid },
        timestamp: pino.stdTimeFunctions.isoTime,
        formatters: { level: (label) => ({ level: label }) },
        redact: {
          paths: [
            "authorization",
            "*.authorization",
            "headers.cookie",
            "*.headers.cookie",
            "secret",
            "*.secret",
            "token",
            "*.token",
            "password",
            "*.password",
          ],
          censor: "[redacted]",
        },
      },
      logDestination(),
    ),
  );
}

const role = () =>
  processSingleton("log:role", () => ({ batched: false, stderr: false, file: undefined as string | undefined }));

/**
 * Called by the app server before it logs anything: its log (a line per request) is written in
 * batches of up to 4 KB, at least every 250 ms and at exit, instead of one synchronous write per
 * line, which was a twelfth of the server's CPU per API request (bench/api-accounts.ts, profiled).
 * A process killed outright (SIGKILL) loses at most its last quarter second of lines. Other
 * processes (the CLI, the worker) write each line at once, in order with what they print.
 */
export function batchLogWrites(): void {
  role().batched = true;
}

/** Called by the operator CLI before it logs anything: its stdout is its answer (one JSON object with --json), so its log goes to stderr. */
export function logToStderr(): void {
  role().stderr = true;
}

/**
 * Called by the tests before anything is logged (tests/helpers/test-log.ts): the code they run in their own process
 * logs to this file, which is printed when a test fails, instead of among the test runner's output.
 */
export function logToFile(file: string): void {
  role().file = file;
}

/** The file this process logs to, if logToFile was called. */
export const logFile = (): string | undefined => role().file;

/** Stdout: batched in the app server, else pino's default (a synchronous write per line); stderr for the CLI. */
function logDestination() {
  const { file } = role();
  if (file) return pino.destination({ dest: file, sync: true, append: true, mkdir: true });
  if (role().stderr) return pino.destination({ dest: 2, sync: true });
  return role().batched ? pino.destination({ dest: 1, sync: false, minLength: 4096, periodicFlush: 250 }) : undefined;
}

/** An error for the log: its name, code and message, never a stack (no internals in logs read by operators). */
export function errorFields(error: unknown): { error: { name?: string; code?: string; message: string } } {
  const { name, code, message } = (error ?? {}) as { name?: string; code?: unknown; message?: unknown };
  return {
    error: {
      name,
      code: typeof code === "string" ? code : undefined,
      // Prisma's messages span lines with the query's shape; the first line says what failed.
      message:
        String(message ?? error)
          .split("\n")
          .find((line) => line.trim()) ?? "",
    },
  };
}
