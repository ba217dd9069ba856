import { describe, expect, it } from "vitest";
import { whereExample } from "./where-example";

const PRICES = [
  { name: "sku", type: "VARCHAR" },
  { name: "title", type: "VARCHAR" },
  { name: "price", type: "BIGINT" },
];

describe("whereExample", () => {
  it.each([
    ["a text and a number column, with a row", PRICES, ["SKU-1", "Product 1", 2], "sku = 'SKU-1' AND price > 2"],
    ["no row: placeholders for the values", PRICES, undefined, "sku = '…' AND price > 10"],
    [
      "a long or null text is passed over, a quote doubled",
      [
        { name: "description", type: "VARCHAR" },
        { name: "note", type: "VARCHAR" },
        { name: "city", type: "VARCHAR" },
      ],
      ["A well-made product that is sold by the piece", null, "L'Haÿ"],
      "city = 'L''Haÿ'",
    ],
    [
      "a name that needs quoting, a decimal as text",
      [{ name: "Unit Price", type: "DECIMAL(18,3)" }],
      ["12.500"],
      '"Unit Price" > 12.500',
    ],
    [
      "neither kind: the first column",
      [{ name: "seen", type: "TIMESTAMP" }],
      ["2026-01-01T00:00:00"],
      "seen IS NOT NULL",
    ],
    ["no columns", [], undefined, ""],
  ])("%s", (_, columns, row, expected) => {
    expect(whereExample(columns, row)).toBe(expected);
  });

  it("never names a column the table lacks", () => {
    const example = whereExample(PRICES, ["SKU-1", "Product 1", 2]);
    expect(example).not.toMatch(/city|Lyon/);
  });
});
