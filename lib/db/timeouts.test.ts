import { describe, expect, it } from "vitest";
import { databaseTimeouts, isQueryReadTimeout, poolTimeoutOptions } from "./timeouts";

describe("database timeouts", () => {
  it("gives the app server a statement deadline and every other process (CLI, imports) none", () => {
    expect(databaseTimeouts({}, true)).toEqual({ connectMs: 5000, statementMs: 5000 });
    expect(databaseTimeouts({}, false)).toEqual({ connectMs: 5000, statementMs: 0 });
    const env = { DATABASE_CONNECT_TIMEOUT_MS: "1500", DATABASE_STATEMENT_TIMEOUT_MS: "800" };
    expect(databaseTimeouts(env, true)).toEqual({ connectMs: 1500, statementMs: 800 });
    expect(databaseTimeouts(env, false)).toEqual({ connectMs: 1500, statementMs: 0 });
    expect(databaseTimeouts({ DATABASE_STATEMENT_TIMEOUT_MS: "0" }, true).statementMs).toBe(0);
  });

  it.each(["5s", "-1", "1.5", " 100"])("refuses %j with the variable's name", (value) => {
    expect(() => databaseTimeouts({ DATABASE_STATEMENT_TIMEOUT_MS: value }, true)).toThrow(
      /DATABASE_STATEMENT_TIMEOUT_MS must be a whole number of milliseconds/,
    );
  });

  it("sets PostgreSQL's statement_timeout and a later client deadline, or neither", () => {
    expect(poolTimeoutOptions({ connectMs: 1000, statementMs: 2000 })).toEqual({
      connectionTimeoutMillis: 1000,
      keepAlive: true,
      statement_timeout: 2000,
      query_timeout: 3000,
    });
    expect(poolTimeoutOptions({ connectMs: 1000, statementMs: 0 })).toEqual({
      connectionTimeoutMillis: 1000,
      keepAlive: true,
    });
  });

  it("tells a query the client stopped waiting for (its connection must be closed)", () => {
    expect(isQueryReadTimeout(new Error("Query read timeout"))).toBe(true);
    expect(
      isQueryReadTimeout(Object.assign(new Error("canceling statement due to statement timeout"), { code: "57014" })),
    ).toBe(false);
  });
});
