import { describe, expect, it } from "vitest";
import { describeFailure } from "./failures";

describe("describeFailure", () => {
  it("redacts a secret before the quote is cut, so no part of one near the cut shows", () => {
    const secret = "hostile-secret-key-4f9a2c";
    // The secret straddles the 300th character of the store's words.
    const error = Object.assign(new Error(`${"x".repeat(280)} ${secret} and more`), {
      $metadata: { httpStatusCode: 500 },
    });
    const said = describeFailure(error, "The store", [secret]);
    expect(said).toMatch(/^The store answered 500: x+ \[redacted\]/);
    expect(said).not.toContain(secret.slice(0, 4));
  });

  it("redacts a secret that spans lines before the store's words are put on one line", () => {
    const key = "-----BEGIN KEY-----\nabcdefgh\n-----END KEY-----";
    const said = describeFailure(new Error(`echoed ${key}`), "The store", [key]);
    expect(said).toBe("The store failed: echoed [redacted].");
  });
});
