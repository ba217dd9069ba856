import { z } from "zod";

/** The supported platforms: this enum is the single source (API paths, OpenAPI, import, CLI). */
export const SOCIAL_PLATFORMS = ["instagram", "tiktok", "x", "youtube", "linkedin"] as const;
export const socialPlatformSchema = z.enum(SOCIAL_PLATFORMS);
export type SocialPlatform = z.infer<typeof socialPlatformSchema>;

type HandleRule = { pattern: RegExp; description: string };

// Handles are case-insensitive on all of these platforms, so they are stored in lower case.
const HANDLE_RULES: Record<SocialPlatform, HandleRule> = {
  instagram: { pattern: /^[a-z0-9._]{1,30}$/, description: "1-30 letters, digits, periods or underscores" },
  tiktok: { pattern: /^[a-z0-9._]{2,24}$/, description: "2-24 letters, digits, periods or underscores" },
  x: { pattern: /^[a-z0-9_]{1,15}$/, description: "1-15 letters, digits or underscores" },
  youtube: { pattern: /^[a-z0-9._-]{3,30}$/, description: "3-30 letters, digits, periods, hyphens or underscores" },
  linkedin: { pattern: /^[a-z0-9-]{3,100}$/, description: "3-100 letters, digits or hyphens" },
};

/** Every platform's rule in one line, for the API reference: "instagram: 1-30 letters, ...; tiktok: ...". */
export function handleRulesText(): string {
  return SOCIAL_PLATFORMS.map((platform) => `${platform}: ${HANDLE_RULES[platform].description}`).join("; ");
}

export type HandleResult = { ok: true; handle: string } | { ok: false; reason: string };

/** Normalises a handle (one leading @ dropped, lower case) and checks the platform's rules. */
export function normaliseHandle(platform: SocialPlatform, raw: string): HandleResult {
  const handle = raw.trim().replace(/^@/, "").toLowerCase();
  const rule = HANDLE_RULES[platform];
  if (!rule.pattern.test(handle)) {
    return { ok: false, reason: `"${raw}" is not a valid ${platform} handle (${rule.description}).` };
  }
  return { ok: true, handle };
}
