import { describe, expect, it } from "vitest";
import { contentDisposition, ifRangeAllows, notModified, parseRange } from "../../lib/downloads/http";

describe("parseRange", () => {
  it.each([
    ["bytes=10-19", 1000, { type: "partial", start: 10, end: 19 }],
    ["bytes=0-0", 1000, { type: "partial", start: 0, end: 0 }],
    ["bytes=100-", 1000, { type: "partial", start: 100, end: 999 }],
    ["bytes=-5", 1000, { type: "partial", start: 995, end: 999 }],
    ["bytes=-5000", 1000, { type: "partial", start: 0, end: 999 }],
    ["bytes=990-5000", 1000, { type: "partial", start: 990, end: 999 }],
    ["bytes=999-999", 1000, { type: "partial", start: 999, end: 999 }],
    ["Bytes=1-2", 1000, { type: "partial", start: 1, end: 2 }],
    ["bytes= 1-2 ", 1000, { type: "partial", start: 1, end: 2 }],
    ["bytes=0-99999999999999999999999", 1000, { type: "partial", start: 0, end: 999 }],
  ] as const)("%s of %d bytes is one range", (header, size, expected) => {
    expect(parseRange(header, size)).toEqual(expected);
  });

  it.each([
    ["bytes=1000-", 1000],
    ["bytes=1000-2000", 1000],
    ["bytes=99999999999999999999999-", 1000],
    ["bytes=-0", 1000],
    ["bytes=0-", 0],
    ["bytes=0-0", 0],
  ])("%s of %d bytes is unsatisfiable", (header, size) => {
    expect(parseRange(header, size)).toEqual({ type: "unsatisfiable" });
  });

  it.each([
    ["no header", null, 1000],
    ["several ranges", "bytes=0-1,5-6", 1000],
    ["a trailing list comma", "bytes=0-1,", 1000],
    ["another unit", "items=0-1", 1000],
    ["no unit", "0-1", 1000],
    ["letters", "bytes=a-b", 1000],
    ["a negative start", "bytes=-1-2", 1000],
    ["no positions", "bytes=-", 1000],
    ["last before first", "bytes=20-10", 1000],
    ["an empty header", "", 1000],
    ["a suffix of an empty file", "bytes=-5", 0],
  ])("%s means the whole file", (_case, header, size) => {
    expect(parseRange(header, size)).toEqual({ type: "full" });
  });
});

describe("conditional requests", () => {
  const etag = '"abc123"';
  const lastModified = new Date("2030-01-01T12:00:00.750Z");
  const headers = (init: Record<string, string>) => new Headers(init);

  it.each([
    ["the same ETag", { "If-None-Match": '"abc123"' }, true],
    ["the weak form of the ETag", { "If-None-Match": 'W/"abc123"' }, true],
    ["the ETag in a list", { "If-None-Match": '"old", "abc123"' }, true],
    ["*", { "If-None-Match": "*" }, true],
    ["another ETag", { "If-None-Match": '"old"' }, false],
    ["If-Modified-Since at Last-Modified", { "If-Modified-Since": lastModified.toUTCString() }, true],
    ["If-Modified-Since later", { "If-Modified-Since": "Tue, 01 Jan 2030 13:00:00 GMT" }, true],
    ["If-Modified-Since earlier", { "If-Modified-Since": "Tue, 01 Jan 2030 11:00:00 GMT" }, false],
    ["an unparseable If-Modified-Since", { "If-Modified-Since": "yesterday" }, false],
    [
      "If-Modified-Since beside a mismatching If-None-Match",
      { "If-None-Match": '"old"', "If-Modified-Since": "Tue, 01 Jan 2030 13:00:00 GMT" },
      false,
    ],
    ["no conditions", {}, false],
  ])("%s: not modified is %s", (_case, init, expected) => {
    expect(notModified(headers(init), etag, lastModified)).toBe(expected);
  });

  it.each([
    [null, true],
    ['"abc123"', true],
    ['W/"abc123"', false],
    ['"old"', false],
    ["Tue, 01 Jan 2030 12:00:00 GMT", false],
  ])("If-Range %s allows the range: %s", (ifRange, expected) => {
    expect(ifRangeAllows(ifRange, etag)).toBe(expected);
  });
});

describe("contentDisposition", () => {
  it.each([
    ["data.csv", `attachment; filename="data.csv"; filename*=UTF-8''data.csv`],
    ["données 2024.csv", `attachment; filename="donn_es 2024.csv"; filename*=UTF-8''donn%C3%A9es%202024.csv`],
    ["数据.json", `attachment; filename="__.json"; filename*=UTF-8''%E6%95%B0%E6%8D%AE.json`],
    ['say "hi".txt', `attachment; filename="say _hi_.txt"; filename*=UTF-8''say%20%22hi%22.txt`],
    [
      "a\r\nSet-Cookie: x=1.txt",
      `attachment; filename="a__Set-Cookie: x=1.txt"; filename*=UTF-8''a__Set-Cookie%3A%20x%3D1.txt`,
    ],
    ["it's (final)*.csv", `attachment; filename="it's (final)*.csv"; filename*=UTF-8''it%27s%20%28final%29%2A.csv`],
    ["100%.csv", `attachment; filename="100_.csv"; filename*=UTF-8''100%25.csv`],
  ])("names %j safely", (name, expected) => {
    const header = contentDisposition(name);
    expect(header).toBe(expected);
    // Every value must be a legal header value (Headers throws on CR/LF/NUL).
    expect(new Headers({ "Content-Disposition": header }).get("Content-Disposition")).toBe(header);
  });
});
