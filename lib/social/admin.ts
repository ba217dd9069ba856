import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";
import { z } from "zod";
import { db } from "../db/client";
import { AppError } from "../errors";
import { normaliseHandle, socialPlatformSchema, type SocialPlatform } from "../schemas/social-platforms";

/** Operator settings of the Social API: per-account access, profile import, platform status. */

export async function enableSocialAccess(buyerId: string, monthlyAllowance: number, ratePerMinute: number) {
  for (const [label, value] of [
    ["allowance", monthlyAllowance],
    ["rate per minute", ratePerMinute],
  ] as const) {
    if (!Number.isInteger(value) || value < 1 || value > 100_000_000) {
      throw new AppError("invalid_argument", `The ${label} must be a whole number from 1 to 100000000, not ${value}.`);
    }
  }
  return db().socialAccess.upsert({
    where: { buyerId },
    create: { buyerId, enabled: true, monthlyAllowance, ratePerMinute },
    update: { enabled: true, monthlyAllowance, ratePerMinute },
    select: { buyerId: true, enabled: true, monthlyAllowance: true, ratePerMinute: true },
  });
}

/** Disables access; the configured numbers are kept for a later re-enable. */
export async function disableSocialAccess(buyerId: string) {
  const updated = await db().socialAccess.updateMany({ where: { buyerId }, data: { enabled: false } });
  return { buyerId, enabled: false, changed: updated.count > 0 };
}

export async function setPlatformAvailability(platform: SocialPlatform, available: boolean, retryAfterSeconds = 300) {
  return db().socialPlatformStatus.upsert({
    where: { platform },
    create: { platform, available, retryAfterSeconds },
    update: { available, retryAfterSeconds },
    select: { platform: true, available: true, retryAfterSeconds: true },
  });
}

/**
 * One NDJSON line: `platform`, `handle`, optional `fetched_at` (ISO 8601), and the profile either
 * as a `profile` object or as the line's remaining fields.
 */
const importLineSchema = z
  .object({
    platform: socialPlatformSchema,
    handle: z.string(),
    fetched_at: z.iso.datetime({ offset: true }).optional(),
    profile: z.record(z.string(), z.unknown()).optional(),
  })
  .catchall(z.unknown());

export type ImportReport = { imported: number; rejected: { line: number; reason: string }[] };

const BATCH_SIZE = 2000;

/** Imports profiles, upserting by (platform, handle). Bad lines are reported; good lines are all kept. */
export async function importSocialProfiles(filePath: string, now = new Date()): Promise<ImportReport> {
  const lines = createInterface({ input: createReadStream(filePath), crlfDelay: Infinity });
  const report: ImportReport = { imported: 0, rejected: [] };
  // Keyed by platform+handle so a later line for the same profile replaces an earlier one.
  let batch = new Map<string, { platform: string; handle: string; profile: string; fetchedAt: Date }>();
  let lineNumber = 0;
  for await (const text of lines) {
    lineNumber++;
    if (!text.trim()) continue;
    const parsed = parseLine(text, now);
    if (!parsed.ok) {
      report.rejected.push({ line: lineNumber, reason: parsed.reason });
      continue;
    }
    batch.set(`${parsed.row.platform}\u0000${parsed.row.handle}`, parsed.row);
    if (batch.size >= BATCH_SIZE) {
      report.imported += await upsertProfiles([...batch.values()]);
      batch = new Map();
    }
  }
  report.imported += await upsertProfiles([...batch.values()]);
  return report;
}

function parseLine(text: string, now: Date) {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { ok: false as const, reason: "not valid JSON" };
  }
  const result = importLineSchema.safeParse(json);
  if (!result.success) {
    const issue = result.error.issues[0];
    return { ok: false as const, reason: `${issue?.path.join(".") || "line"}: ${issue?.message ?? "invalid"}` };
  }
  const { platform, handle: rawHandle, fetched_at, profile, ...rest } = result.data;
  const handle = normaliseHandle(platform, rawHandle);
  if (!handle.ok) return { ok: false as const, reason: handle.reason };
  const row = {
    platform,
    handle: handle.handle,
    profile: JSON.stringify(profile ?? rest),
    fetchedAt: fetched_at ? new Date(fetched_at) : now,
  };
  return { ok: true as const, row };
}

async function upsertProfiles(rows: { platform: string; handle: string; profile: string; fetchedAt: Date }[]) {
  if (rows.length === 0) return 0;
  await db().$executeRaw`
    INSERT INTO social_profiles (platform, handle, profile, fetched_at)
    SELECT * FROM unnest(
      ${rows.map((row) => row.platform)}::text[],
      ${rows.map((row) => row.handle)}::text[],
      ${rows.map((row) => row.profile)}::jsonb[],
      ${rows.map((row) => row.fetchedAt)}::timestamptz[])
    ON CONFLICT (platform, handle) DO UPDATE
      SET profile = excluded.profile, fetched_at = excluded.fetched_at, imported_at = now()`;
  return rows.length;
}
