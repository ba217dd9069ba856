import { z } from "zod";
import { findBuyerByEmail } from "../../lib/buyers";
import { socialPlatformSchema } from "../../lib/schemas/social-platforms";
import {
  disableSocialAccess,
  enableSocialAccess,
  importSocialProfiles,
  setPlatformAvailability,
} from "../../lib/social/admin";
import { assertReadableFile, bool, command, PartialFailure, text, wholeNumber, type Command } from "./command";

/** The Social API: buyers' access, the profiles, the platforms' availability. */

export const commands: Record<string, Command> = {
  "social:enable": command(
    z.object({ email: text, allowance: wholeNumber, "rate-per-minute": wholeNumber }),
    async (options) => {
      const buyer = await findBuyerByEmail(options.email);
      const access = await enableSocialAccess(buyer.id, options.allowance, options["rate-per-minute"]);
      return {
        json: {
          buyer_id: buyer.id,
          enabled: true,
          allowance: access.monthlyAllowance,
          rate_per_minute: access.ratePerMinute,
        },
        text: `Social API enabled for ${buyer.email}: ${access.monthlyAllowance} reads/month, ${access.ratePerMinute}/minute`,
      };
    },
  ),

  "social:disable": command(z.object({ email: text }), async ({ email }) => {
    const buyer = await findBuyerByEmail(email);
    await disableSocialAccess(buyer.id);
    return { json: { buyer_id: buyer.id, enabled: false }, text: `Social API disabled for ${buyer.email}` };
  }),

  "social:import": command(z.object({ path: text }), async (options) => {
    await assertReadableFile(options.path);
    const report = await importSocialProfiles(options.path);
    const rejectedLines = report.rejected.map(({ line, reason }) => `  line ${line}: ${reason}`).join("\n");
    const output = {
      json: { imported: report.imported, rejected: report.rejected.length, errors: report.rejected },
      text: `Imported ${report.imported} profiles; rejected ${report.rejected.length} lines${rejectedLines ? `:\n${rejectedLines}` : ""}`,
    };
    if (report.rejected.length > 0) throw new PartialFailure(output);
    return output;
  }),

  "social:platform": command(
    z.object({
      platform: socialPlatformSchema,
      available: bool,
      "retry-after": wholeNumber.min(1).max(86400).optional(),
    }),
    async (options) => {
      const status = await setPlatformAvailability(options.platform, options.available, options["retry-after"]);
      return {
        json: { platform: status.platform, available: status.available, retry_after: status.retryAfterSeconds },
        text: `${status.platform} is now ${status.available ? "available" : "unavailable"}`,
      };
    },
  ),
};
