import { describe, expect, it } from "vitest";
import { AppError, inputMessage } from "./errors";

describe("inputMessage", () => {
  const refused = new AppError("invalid_sql", "the query is empty.");
  it.each([
    ["the API's parameter", { sql: "q" }, "q: the query is empty."],
    ["MCP's argument", { sql: "sql" }, "sql: the query is empty."],
    ["the Query page's one text box", { sql: null }, "The query is empty."],
  ])("names the SQL as %s", (_, names, expected) => {
    expect(inputMessage(refused, names)).toBe(expected);
  });

  it("leaves an error about no typed input as it is", () => {
    expect(inputMessage(new AppError("order_not_found", "No order ord_x."), { sql: "q" })).toBe("No order ord_x.");
  });
});
