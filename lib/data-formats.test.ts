import { describe, expect, it } from "vitest";
import { formatFromName, isOwnFormat, renditionName } from "./data-formats";

describe("a file's format from its name", () => {
  it.each([
    ["products.csv", "csv", null],
    ["PRODUCTS.CSV", "csv", null],
    ["products.csv.gz", "csv", "gzip"],
    ["products.tsv", "tsv", null],
    ["products.tab.gz", "tsv", "gzip"],
    ["products.json", "json", null],
    ["products.jsonl", "jsonl", null],
    ["products.ndjson.gz", "jsonl", "gzip"],
    ["products.parquet", "parquet", null],
    ["archive.tar.gz", "binary", null],
    ["products.csv.zip", "binary", null],
    ["README", "binary", null],
    [".csv", "csv", null],
  ])("%s is %s (compression %s)", (name, format, compression) => {
    expect(formatFromName(name)).toEqual({ format, compression });
  });
});

describe("renditions", () => {
  it.each([
    ["products.csv", "parquet", "products.parquet"],
    ["products.csv.gz", "parquet", "products.parquet"],
    ["products.parquet", "csv", "products.csv"],
    ["events.ndjson", "csv", "events.csv"],
    ["q3.prices.json", "jsonl", "q3.prices.jsonl"],
    [".csv", "parquet", "data.parquet"],
  ] as const)("%s as %s is named %s", (name, format, expected) => {
    expect(renditionName(name, format)).toBe(expected);
  });

  it("asking for the file's own format means the original", () => {
    expect(isOwnFormat("csv", "csv")).toBe(true);
    expect(isOwnFormat("parquet", "parquet")).toBe(true);
    expect(isOwnFormat("csv", "parquet")).toBe(false);
  });
});
