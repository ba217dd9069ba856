import { describe, expect, it } from "vitest";
import { normaliseHandle } from "./social-platforms";

describe("handle rules", () => {
  it.each([
    ["instagram", "@NatGeo", "natgeo"],
    ["x", "NASA", "nasa"],
    ["tiktok", " khaby.lame ", "khaby.lame"],
    ["youtube", "@Veritasium", "veritasium"],
    ["linkedin", "Satya-Nadella", "satya-nadella"],
  ] as const)("normalise %s %j to %j", (platform, raw, expected) => {
    expect(normaliseHandle(platform, raw)).toEqual({ ok: true, handle: expected });
  });

  it.each([
    ["x", "this_handle_is_too_long"],
    ["x", "has space"],
    ["instagram", "@@double"],
    ["instagram", ""],
    ["tiktok", "a"],
    ["linkedin", "under_score"],
    ["youtube", "ab"],
  ] as const)("reject %s %j with the platform's rule", (platform, raw) => {
    const result = normaliseHandle(platform, raw);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toContain(`not a valid ${platform} handle`);
  });
});
