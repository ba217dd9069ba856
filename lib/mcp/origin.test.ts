import { describe, expect, it } from "vitest";
import { originAllowed } from "./origin";

describe("originAllowed", () => {
  it.each([
    // [origin, APP_URL, allowed]
    [null, "https://data.example.com", true],
    [null, "", true],
    ["https://data.example.com", "https://data.example.com", true],
    ["https://data.example.com", "https://data.example.com/", true],
    ["https://data.example.com:8443", "https://data.example.com", false],
    ["http://data.example.com", "https://data.example.com", false],
    ["https://evil.example.com", "https://data.example.com", false],
    ["http://localhost:3000", "https://data.example.com", false],
    ["http://localhost:3000", "", true],
    ["http://127.0.0.1:41234", "", true],
    ["http://[::1]:8080", "", true],
    ["http://evil.example.com", "", false],
    ["http://localhost.evil.example.com", "", false],
    ["null", "", false],
    ["file://", "", false],
    ["not a url", "https://data.example.com", false],
  ])("Origin %j with APP_URL %j: %s", (origin, appUrl, allowed) => {
    expect(originAllowed(origin, appUrl)).toBe(allowed);
  });
});
