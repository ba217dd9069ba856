import { z } from "zod";
import { apiKeyExpiryDaysSchema, apiKeyPermissionSchema, createApiKey, revokeApiKey } from "../../lib/keys";
import { findBuyerByEmail } from "../../lib/buyers";
import { OPERATOR, recordSecurityEvent } from "../../lib/security/log";
import { command, text, type Command } from "./command";

/** API keys, recorded in the security log with the operator as actor. */

export const commands: Record<string, Command> = {
  "key:create": command(
    z.object({
      email: text,
      name: text,
      permission: apiKeyPermissionSchema,
      "expires-days": z.coerce.number().pipe(apiKeyExpiryDaysSchema),
    }),
    async (options) => {
      const buyer = await findBuyerByEmail(options.email);
      const key = await createApiKey({
        buyerId: buyer.id,
        name: options.name,
        permission: options.permission,
        expiresInDays: options["expires-days"],
      });
      await recordSecurityEvent(buyer.id, "key_created", OPERATOR, {
        id: key.id,
        detail: `“${key.name}” (${key.permission})`,
      });
      return {
        json: {
          id: key.id,
          secret: key.secret,
          name: key.name,
          permission: key.permission,
          expires_at: key.expiresAt.toISOString(),
        },
        text: `Created key ${key.id} (${key.permission}, expires ${key.expiresAt.toISOString()})\nSecret (shown only now): ${key.secret}`,
      };
    },
  ),

  "key:revoke": command(z.object({ id: text }), async ({ id }) => {
    const revoked = await revokeApiKey(id);
    if (!revoked.alreadyRevoked) {
      await recordSecurityEvent(revoked.buyerId, "key_revoked", OPERATOR, { id, detail: `“${revoked.name}”` });
    }
    return {
      json: { id, revoked_at: revoked.revokedAt.toISOString() },
      text: `Key ${id} revoked at ${revoked.revokedAt.toISOString()}`,
    };
  }),
};
