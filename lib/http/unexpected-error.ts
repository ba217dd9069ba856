import { errorFields, logger } from "../log";
import { formatSeconds } from "../format";

/**
 * The one answer to an error that is not the app's own (not an AppError), for every HTTP surface
 * (the API's problem+json, lib/http/problem.ts; Delta Sharing's protocol errors,
 * lib/sharing/errors.ts): the database unreachable or too slow is a 503 with Retry-After, anything
 * else our defect, a 500. Logged here, once, with the request id; the client gets a sentence
 * without internals (no stack, no SQL).
 */
export type UnexpectedError = {
  kind: "unavailable" | "internal";
  status: 503 | 500;
  message: string;
  retryAfterSeconds?: number;
};

/** How long a client should wait after the database failed it: a restart or failover takes seconds. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

export function unexpectedError(error: unknown, requestId: string): UnexpectedError {
  if (isDatabaseUnavailable(error)) {
    const { error: cause } = errorFields(error);
    logger().error({ request_id: requestId, error: cause }, `database unavailable: ${cause.message}`);
    return {
      kind: "unavailable",
      status: 503,
      message: `The service cannot reach its database right now. Retry after ${formatSeconds(DATABASE_RETRY_AFTER_SECONDS)}.`,
      retryAfterSeconds: DATABASE_RETRY_AFTER_SECONDS,
    };
  }
  // Our own defect: the stack goes to the log (never to the client) so it can be fixed.
  logger().error({ request_id: requestId, err: error }, "unexpected error");
  return {
    kind: "internal",
    status: 500,
    message: `Something went wrong on our side. Quote request id ${requestId} if you contact support.`,
  };
}

/**
 * Connection-level failures of PostgreSQL and its deadlines (lib/db/timeouts.ts), as driver errors
 * or Prisma's wrapping of them (which keeps the driver's message).
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  // SQLSTATE classes 08 (connection exception), 57014 (query_canceled: statement_timeout),
  // 57P01-03 (shut down, cannot connect now), 53300 (too many connections).
  const code = (error as { code?: unknown })?.code;
  if (typeof code === "string" && /^(08...|57014|57P0[123]|53300)$/.test(code)) return true;
  const text = `${(error as { code?: string })?.code ?? ""} ${(error as Error)?.message ?? ""}`;
  // node-postgres's own deadlines: "Query read timeout" (no answer), "timeout exceeded when trying
  // to connect" (no free pool connection), "Connection terminated due to connection timeout".
  return /ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENOTFOUND|P1001|P1002|P1017|Can't reach database|Connection terminated|DatabaseNotReachable|too many clients|the database system is (starting|shutting) up|canceling statement due to statement timeout|Query read timeout|timeout exceeded when trying to connect/i.test(
    text,
  );
}
