import { describe, expect, it } from "vitest";
import { rowsOrder } from "./table-request";

const asc = (column: string) => ({ column, descending: false });
const desc = (column: string) => ({ column, descending: true });

describe("rowsOrder", () => {
  it.each([
    ["a keyed snapshot: the key is the whole tiebreak", { mode: "snapshot", key: ["id"] }, [], [asc("id")], false],
    [
      "a keyed snapshot sorted by another column: the key after it",
      { mode: "snapshot", key: ["shop", "id"] },
      [desc("price")],
      [desc("price"), asc("shop"), asc("id")],
      false,
    ],
    [
      "a key column asked keeps its direction and is not named twice",
      { mode: "snapshot", key: ["shop", "id"] },
      [desc("id")],
      [desc("id"), asc("shop")],
      false,
    ],
    ["an append table: a key may repeat across versions", { mode: "append", key: ["id"] }, [], [asc("id")], true],
    ["a table without key", { mode: "snapshot", key: [] }, [asc("name")], [asc("name")], true],
  ] as const)("%s", (_, table, asked, orderBy, fileOrder) => {
    expect(rowsOrder({ mode: table.mode, key: [...table.key] }, [...asked])).toEqual({ orderBy, fileOrder });
  });
});
