import { describe, expect, it } from "vitest";
import { requestIdFrom } from "./request-id";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe("requestIdFrom", () => {
  it.each([
    ["a valid X-Request-Id is echoed", "req-123_abc.DEF", "req-123_abc.DEF"],
    ["128 characters are fine", "b".repeat(128), "b".repeat(128)],
    ["one with spaces is replaced", "not valid", UUID],
    ["one over 128 characters is replaced", "a".repeat(129), UUID],
    ["one with a NUL byte is replaced", "a\u0000b", UUID],
    ["a repeated header is replaced", ["a", "b"], UUID],
    ["none: a new one", undefined, UUID],
  ])("%s", (_case, incoming, expected) => {
    const id = requestIdFrom(incoming);
    if (typeof expected === "string") expect(id).toBe(expected);
    else expect(id).toMatch(expected);
  });
});
