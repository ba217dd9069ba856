import { describe, expect, it } from "vitest";
import { contentTypeOf } from "../operator/orders";

describe("contentTypeOf", () => {
  it.each([
    ["reviews.jsonl", "application/x-ndjson"],
    ["REVIEWS.NDJSON", "application/x-ndjson"],
    ["products.csv", "text/csv"],
    ["catalogue.json", "application/json"],
    ["archive.parquet.gz", "application/gzip"],
    ["no-extension", "application/octet-stream"],
  ])("%s is %s", (name, type) => {
    expect(contentTypeOf(name)).toBe(type);
  });
});
