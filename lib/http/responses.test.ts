import { describe, expect, it } from "vitest";
import { compactJson, unroutableApiPath } from "./responses";

describe("unroutableApiPath: API paths Next.js would not route as sent", () => {
  it.each([
    ["/api/v1/orders/%", "invalid_request"],
    ["/api/v1/orders/ord_%C3%28", "invalid_request"],
    ["/api/v1/orders/x/files/%E0%80%AF?limit=1", "invalid_request"],
    ["/api/v1/%2e%2e/health", "invalid_request"],
    ["/api/v1/orders/%2E%2e/%2e%2e/orders", "invalid_request"],
    ["/api/v1/orders/..", "invalid_request"],
    ["/api/v1/orders/.", "invalid_request"],
    ["/api/v1/orders/..\\x", "invalid_request"],
    ["/api/dl/%zz", "download_link_invalid"],
    ["/api/dl/%2e%2e", "download_link_invalid"],
  ])("refuses %s with %s", (url, code) => {
    expect(unroutableApiPath(url)?.code).toBe(code);
  });

  it.each([
    "/api/v1/orders?limit=%zz",
    "/api/v1/orders/ord_%00",
    "/api/v1/orders/a%2F..%2Fb",
    "/api/v1/orders/...",
    "/api/v1/orders/ord_0123/files/fil_%C3%A9",
    "/api/dl/abc.def",
    "/orders/%zz/files/x",
    "/share/%2e%2e",
    "/api/v10/%",
  ])("leaves %s to the router", (url) => {
    expect(unroutableApiPath(url)).toBeUndefined();
  });
});

describe("compactJson", () => {
  it.each([
    ['{"name" : "products", "rows" : 2, "key" : ["id"]}', '{"name":"products","rows":2,"key":["id"]}'],
    ['{"a" : {"b" : [1, 2.50, null]}}', '{"a":{"b":[1,2.50,null]}}'],
    // Whitespace and quotes inside strings are the data's.
    ['{"s" : "a \\" : b, c", "t" : "\\\\"}', '{"s":"a \\" : b, c","t":"\\\\"}'],
    ['[\n  {"x" : "line\\nbreak"}\n]', '[{"x":"line\\nbreak"}]'],
  ])("%s", (spaced, compact) => {
    expect(compactJson(spaced)).toBe(compact);
    expect(JSON.parse(compactJson(spaced))).toEqual(JSON.parse(spaced));
  });

  it("keeps a big integer's digits", () => {
    expect(compactJson('{"n" : 12345678901234567890}')).toBe('{"n":12345678901234567890}');
  });
});
