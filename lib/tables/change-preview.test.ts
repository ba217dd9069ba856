import { describe, expect, it } from "vitest";
import { changesOf } from "./change-preview";

const columns = [
  { name: "sku", type: "VARCHAR", nullable: true },
  { name: "price", type: "DOUBLE", nullable: true },
  { name: "_change_type", type: "VARCHAR", nullable: true },
];

describe("a change file's preview as changes", () => {
  it("makes each pre-image and the post-image after it one update, changed values old and new", () => {
    const preview = {
      columns,
      total_rows: 7,
      rows: [
        ["SKU-1", 2, "insert"],
        ["SKU-2", 4, "update_preimage"],
        ["SKU-2", 5, "update_postimage"],
        ["SKU-3", null, "update_preimage"],
        ["SKU-3", 6, "update_postimage"],
        ["SKU-4", 8, "delete"],
        ["SKU-5", 9, "update_preimage"],
      ],
    };
    expect(changesOf(preview)).toEqual({
      columns: columns.slice(0, 2),
      fileRows: 7,
      changes: [
        { kind: "insert", values: [{ value: "SKU-1" }, { value: 2 }] },
        { kind: "update", values: [{ value: "SKU-2" }, { old: 4, new: 5 }] },
        { kind: "update", values: [{ value: "SKU-3" }, { old: null, new: 6 }] },
        { kind: "delete", values: [{ value: "SKU-4" }, { value: 8 }] },
        // Its post-image is past the preview's last row: shown as what it is.
        { kind: "update_preimage", values: [{ value: "SKU-5" }, { value: 9 }] },
      ],
    });
  });

  it("is null for a file without the change type column", () => {
    expect(changesOf({ columns: columns.slice(0, 2), rows: [["a", 1]], total_rows: 1 })).toBeNull();
  });
});
