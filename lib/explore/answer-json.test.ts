import { describe, expect, it } from "vitest";
import { answerJson } from "./answer-json";

describe("answerJson", () => {
  it.each([
    [{ columns: [{ name: "a", type: "INTEGER" }] }, "[[1],[2]]", { truncated: false }],
    [{}, "[]", {}],
    [{ version: 3 }, '[["x"]]', {}],
    [{}, "[[null]]", { next_offset: 20, truncated_reason: "bytes" }],
  ])("splices the rows between the members: %j", (before, rows, after) => {
    expect(JSON.parse(answerJson(before, rows, after))).toEqual({ ...before, rows: JSON.parse(rows), ...after });
  });
});
