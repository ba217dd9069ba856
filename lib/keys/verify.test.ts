import { describe, expect, it } from "vitest";
import type { AppError } from "../errors";
import { presentedKey } from "./verify";

const refusal = (authorization: string) => {
  try {
    presentedKey(authorization);
  } catch (error) {
    return error as AppError;
  }
  throw new Error(`${authorization} was accepted`);
};

describe("presentedKey", () => {
  it("says a share link's token is one, not a key mistyped", () => {
    const error = refusal(`Bearer dsl_${"A".repeat(43)}`);
    expect(error.code).toBe("invalid_api_key");
    expect(error.message).toMatch(/^This is a share link's token \(dsl_…\), not an API key/);
    expect(error.message).not.toContain("copied whole");
  });

  it.each([`Bearer dak_${"A".repeat(10)}`, `Bearer dsl_${"A".repeat(42)}`])(
    "%s: check it was copied whole",
    (value) => {
      const error = refusal(value);
      expect(error).toMatchObject({ code: "invalid_api_key", message: expect.stringContaining("copied whole") });
    },
  );
});
