import type { z } from "zod";
import { db } from "../db/client";
import type { socialProfileSchema } from "../schemas/api";
import { AppError, type ErrorCode } from "../errors";
import { allowancePeriod, allowanceUsage, consumeAllowance, type AllowanceState } from "./access";
import {
  normaliseHandle,
  SOCIAL_PLATFORMS,
  socialPlatformSchema,
  type SocialPlatform,
} from "../schemas/social-platforms";
import { formatSeconds } from "../format";

export type SocialProfileBody = z.infer<typeof socialProfileSchema>;

/** A platform path segment: one of the supported platforms, else 404 platform_not_supported. */
export function parsePlatform(value: string): SocialPlatform {
  const parsed = socialPlatformSchema.safeParse(value);
  if (!parsed.success) {
    throw new AppError(
      "platform_not_supported",
      `"${value}" is not a supported platform. Supported: ${SOCIAL_PLATFORMS.join(", ")}.`,
    );
  }
  return parsed.data;
}

/**
 * One profile read (the platform is parsed first, see parsePlatform). Checks in this order: handle
 * (400), the platform's source (503 with Retry-After), the stored profile (404), then one read from
 * the month's allowance (429 with Retry-After until the month ends). Only a read that returns a
 * profile uses the allowance. Every answer carries the allowance state, so clients see what is left.
 */
export async function readSocialProfile(input: {
  buyerId: string;
  allowance: number;
  platform: SocialPlatform;
  handle: string;
  /** False for HEAD: nothing is read, so nothing is taken from the allowance. */
  consume?: boolean;
  now?: Date;
}): Promise<{ body: SocialProfileBody; allowance: AllowanceState }> {
  const now = input.now ?? new Date();
  const { platform } = input;
  const handle = normaliseHandle(platform, input.handle);
  if (!handle.ok) throw new AppError("invalid_request", `Invalid handle: ${handle.reason}`);

  /** A refusal that also tells the allowance left (none of it was used). */
  const refusal = async (code: ErrorCode, message: string, headers: Record<string, string> = {}) =>
    new AppError(code, message, {
      ...allowanceHeaders(await allowanceUsage(input.buyerId, input.allowance, now)),
      ...headers,
    });

  const [status, profile] = await Promise.all([
    db().socialPlatformStatus.findUnique({ where: { platform } }),
    db().socialProfile.findUnique({ where: { platform_handle: { platform, handle: handle.handle } } }),
  ]);
  if (status && !status.available) {
    throw await refusal(
      "social_unavailable",
      `The ${platform} source is unavailable right now. Retry after ${formatSeconds(status.retryAfterSeconds)}.`,
      { "Retry-After": String(status.retryAfterSeconds) },
    );
  }
  if (!profile) throw await refusal("profile_not_found", `No ${platform} profile for the handle ${handle.handle}.`);

  const allowance =
    input.consume === false
      ? await allowanceUsage(input.buyerId, input.allowance, now)
      : await consumeAllowance(input.buyerId, input.allowance, now);
  if (!allowance) {
    const resetAt = allowancePeriod(now).end;
    const retryAfter = Math.max(1, Math.ceil((resetAt.getTime() - now.getTime()) / 1000));
    throw await refusal(
      "social_allowance_exhausted",
      `This account's social allowance of ${input.allowance} profile reads for this month is used up. It resets at ${resetAt.toISOString()}.`,
      { "Retry-After": String(retryAfter) },
    );
  }
  return {
    body: {
      platform,
      handle: profile.handle,
      profile: profile.profile as SocialProfileBody["profile"],
      fetched_at: profile.fetchedAt.toISOString(),
    },
    allowance,
  };
}

/** The month's allowance in response headers: the limit, what is left, and when it resets (ISO 8601). */
export function allowanceHeaders(state: AllowanceState): Record<string, string> {
  return {
    "Social-Allowance-Limit": String(state.allowance),
    "Social-Allowance-Remaining": String(state.remaining),
    "Social-Allowance-Reset": state.resetAt.toISOString(),
  };
}
