import pg from "pg";
import { afterEach, describe, expect, it, vi } from "vitest";
import { problemResponse } from "./problem";
import { logger } from "../log";

afterEach(() => vi.restoreAllMocks());

describe("problemResponse for the database's deadlines (lib/db/timeouts.ts)", () => {
  const statementTimeout = Object.assign(
    new pg.DatabaseError("canceling statement due to statement timeout", 0, "error"),
    { code: "57014" },
  );
  // Prisma's wrapping keeps the driver's message, not its code.
  const prismaWrapped = Object.assign(
    new Error(
      "\nInvalid `prisma.apiKey.findMany()` invocation:\n\n\nDatabase error. Code: `57014`. Message: `canceling statement due to statement timeout`",
    ),
    { code: "P2039" },
  );

  it.each([
    ["statement_timeout (57014)", statementTimeout],
    ["statement_timeout through Prisma", prismaWrapped],
    ["no answer within the client's deadline", new Error("Query read timeout")],
    ["no free pool connection in time", new Error("timeout exceeded when trying to connect")],
    ["no connection in time", new Error("Connection terminated due to connection timeout")],
  ])("answers %s with 503 service_unavailable and Retry-After", async (_, error) => {
    const log = vi.spyOn(logger(), "error").mockImplementation(() => {});
    const response = problemResponse(error, "req-1");
    expect(response.status).toBe(503);
    expect(response.headers.get("retry-after")).toBe("5");
    expect(await response.json()).toMatchObject({ code: "service_unavailable", request_id: "req-1" });
    expect(log).toHaveBeenCalledWith(
      expect.objectContaining({ request_id: "req-1" }),
      expect.stringMatching(/^database unavailable: /),
    );
  });

  it("leaves other database errors a 500", () => {
    vi.spyOn(logger(), "error").mockImplementation(() => {});
    const unique = Object.assign(new pg.DatabaseError("duplicate key value", 0, "error"), { code: "23505" });
    expect(problemResponse(unique, "req-2").status).toBe(500);
  });
});
