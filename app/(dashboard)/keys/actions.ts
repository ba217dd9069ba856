"use server";

import { z } from "zod";
import { buyerAction } from "@/lib/auth/buyer-action";
import { CONTROL_CHARACTERS, NAME_MAX_LENGTH } from "@/lib/contract";
import { isTypedId } from "@/lib/ids";
import { sessionActor } from "@/lib/security/client";
import { siteOrigin } from "@/lib/site";
import { recordSecurityEvent } from "@/lib/security/log";
import {
  apiKeyExpiryDaysSchema,
  apiKeyPermissionSchema,
  createApiKey,
  replaceApiKey,
  replaceOverlapSchema,
  revokeApiKey,
  type ApiKeyPermission,
} from "@/lib/keys";

/** Key mutations of the dashboard (session, validation and CSRF: see buyerAction). */

export type CreatedKey = {
  id: string;
  name: string;
  permission: ApiKeyPermission;
  secret: string;
  expiresAt: string;
  /** The site's origin, for the sharing profile of a `datasets:read` key. */
  origin: string;
};

const KEYS_PAGE = () => "/keys";
const expiryField = z.coerce.number().pipe(apiKeyExpiryDaysSchema);
const keyIdSchema = z.string().refine((id) => isTypedId("key", id), "Unknown key.");

export const createKeyAction = buyerAction(
  z.object({
    name: z
      .string()
      .trim()
      .min(1, "Give the key a name.")
      .max(NAME_MAX_LENGTH, `Names are at most ${NAME_MAX_LENGTH} characters.`)
      .refine((name) => !CONTROL_CHARACTERS.test(name), "A key name cannot contain control characters."),
    expiresInDays: expiryField,
    permission: apiKeyPermissionSchema,
  }),
  async (buyerId, input) => {
    const key = await createApiKey({ buyerId, ...input });
    await recordSecurityEvent(buyerId, "key_created", await sessionActor(), {
      id: key.id,
      detail: `“${key.name}” (${key.permission})`,
    });
    return { ok: true, key: await created(key) };
  },
  { revalidate: KEYS_PAGE },
);

export const replaceKeyAction = buyerAction(
  z.object({ keyId: keyIdSchema, expiresInDays: expiryField, overlap: replaceOverlapSchema }),
  async (buyerId, { keyId, expiresInDays, overlap }) => {
    const actor = await sessionActor();
    const replaced = await replaceApiKey({ buyerId, keyId, expiresInDays, overlap });
    const key = await created(replaced);
    const old = replaced.oldRetiresAt
      ? overlap === "none"
        ? "the old key was revoked at once"
        : `the old key retires at ${replaced.oldRetiresAt.toISOString()}`
      : "the old key no longer worked";
    await recordSecurityEvent(buyerId, "key_replaced", actor, {
      id: keyId,
      detail: `“${key.name}” replaced by a new key (${key.id}); ${old}`,
    });
    if (overlap === "none" && replaced.oldRetiresAt) {
      await recordSecurityEvent(buyerId, "key_revoked", actor, { id: keyId, detail: `“${key.name}” (replaced)` });
    }
    return { ok: true, key };
  },
  { revalidate: KEYS_PAGE },
);

export const revokeKeyAction = buyerAction(
  keyIdSchema,
  async (buyerId, keyId) => {
    const revoked = await revokeApiKey(keyId, { buyerId });
    if (!revoked.alreadyRevoked) {
      await recordSecurityEvent(buyerId, "key_revoked", await sessionActor(), {
        id: keyId,
        detail: `“${revoked.name}”`,
      });
    }
    return { ok: true };
  },
  { revalidate: KEYS_PAGE },
);

async function created(key: Awaited<ReturnType<typeof createApiKey>>): Promise<CreatedKey> {
  return {
    origin: await siteOrigin(),
    id: key.id,
    name: key.name,
    permission: key.permission,
    secret: key.secret,
    expiresAt: key.expiresAt.toISOString(),
  };
}
