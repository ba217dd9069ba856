import { beforeEach, describe, expect, it } from "vitest";
import { AppError } from "../../lib/errors";
import { DOWNLOAD_LINK_TTL_SECONDS } from "../contract";
import { signDownloadToken, verifyDownloadToken } from "./token";

const SECRET = "download-token-test-secret-0123456789abcdef";
const NOW = new Date("2030-01-01T12:00:00Z");
const EXPIRES = new Date(NOW.getTime() + DOWNLOAD_LINK_TTL_SECONDS * 1000);
const FILE_ID = "fil_0123456789abcdef0123456789abcdef";

beforeEach(() => {
  process.env.AUTH_SECRET = SECRET;
});

const sign = () => signDownloadToken({ fileId: FILE_ID, expiresAt: EXPIRES });

function codeOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (error instanceof AppError) return error.code;
    throw error;
  }
  throw new Error("expected an AppError");
}

/** Replaces one character of `text` at `index` with a different base64url character. */
function flip(text: string, index: number): string {
  const char = text[index] === "A" ? "B" : "A";
  return text.slice(0, index) + char + text.slice(index + 1);
}

describe("download tokens", () => {
  it("round-trip the file id and the expiry (whole seconds)", () => {
    const token = sign();
    expect(token).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    expect(verifyDownloadToken(token, NOW)).toEqual({ fileId: FILE_ID, expiresAt: EXPIRES });
    const withMillis = signDownloadToken({ fileId: FILE_ID, expiresAt: new Date(EXPIRES.getTime() + 999) });
    expect(verifyDownloadToken(withMillis, NOW).expiresAt).toEqual(EXPIRES);
  });

  it("are valid until the last second before expiry and expired from then on", () => {
    const token = sign();
    expect(verifyDownloadToken(token, new Date(EXPIRES.getTime() - 1)).fileId).toBe(FILE_ID);
    expect(codeOf(() => verifyDownloadToken(token, EXPIRES))).toBe("download_link_expired");
    expect(codeOf(() => verifyDownloadToken(token, new Date(EXPIRES.getTime() + 86_400_000)))).toBe(
      "download_link_expired",
    );
  });

  it("tell the holder of an expired link to ask the API for a new one", () => {
    expect(() => verifyDownloadToken(sign(), EXPIRES)).toThrow(/expired.*Request a new one from the API/);
  });

  it.each([
    ["a changed payload character", (token: string) => flip(token, 3)],
    ["a changed signature character", (token: string) => flip(token, token.length - 5)],
    [
      "a payload naming another file",
      (token: string) =>
        `${signDownloadToken({ fileId: "fil_other", expiresAt: EXPIRES }).split(".")[0]}.${token.split(".")[1]}`,
    ],
    [
      "a later expiry grafted onto the signature",
      (token: string) =>
        `${signDownloadToken({ fileId: FILE_ID, expiresAt: new Date(EXPIRES.getTime() + 3_600_000) }).split(".")[0]}.${token.split(".")[1]}`,
    ],
    ["a truncated signature", (token: string) => token.slice(0, -2)],
    ["an extra signature character", (token: string) => `${token}A`],
  ])("are refused with %s", (_case, tamper) => {
    const token = sign();
    const tampered = tamper(token);
    expect(tampered).not.toBe(token);
    expect(codeOf(() => verifyDownloadToken(tampered, NOW))).toBe("download_link_invalid");
  });

  it("are refused when the signature is spelled non-canonically (same bytes, other unused bits)", () => {
    const token = sign();
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    // The last of 43 characters carries 4 bits of the MAC and 2 unused ones; flip an unused one.
    const last = alphabet[alphabet.indexOf(token.slice(-1)) ^ 1];
    const respelled = token.slice(0, -1) + last;
    const macOf = (text: string) => Buffer.from(text.split(".")[1] ?? "", "base64url");
    expect(macOf(respelled)).toEqual(macOf(token));
    expect(codeOf(() => verifyDownloadToken(respelled, NOW))).toBe("download_link_invalid");
  });

  it("are refused when signed with another secret, even past their expiry", () => {
    const token = sign();
    process.env.AUTH_SECRET = "another-secret-of-sufficient-length-0123456789";
    expect(codeOf(() => verifyDownloadToken(token, NOW))).toBe("download_link_invalid");
    // The signature is checked before the expiry is trusted.
    expect(codeOf(() => verifyDownloadToken(token, new Date(EXPIRES.getTime() + 1000)))).toBe("download_link_invalid");
  });

  it.each([
    ["empty", ""],
    ["no separator", "abcdef"],
    ["three parts", "abc.def.ghi"],
    ["an empty payload", ".abc"],
    ["an empty signature", "abc."],
    ["standard base64 characters", "ab+c/d==.abcd"],
    ["whitespace", " abc.def"],
    ["an oversized token", `${"A".repeat(600)}.${"A".repeat(43)}`],
  ])("are refused when malformed: %s", (_case, token) => {
    expect(codeOf(() => verifyDownloadToken(token, NOW))).toBe("download_link_invalid");
  });

  it("explain a refused link without revealing why the signature failed", () => {
    expect(() => verifyDownloadToken("abc.def", NOW)).toThrow(/not valid.*Request a new one/);
  });

  it("cannot be signed for a missing file id or an impossible expiry", () => {
    expect(() => signDownloadToken({ fileId: "", expiresAt: EXPIRES })).toThrow(RangeError);
    expect(() => signDownloadToken({ fileId: FILE_ID, expiresAt: new Date(Number.NaN) })).toThrow(RangeError);
    expect(() => signDownloadToken({ fileId: FILE_ID, expiresAt: new Date("2200-01-01T00:00:00Z") })).toThrow(
      RangeError,
    );
  });
});
