"use server";

import { revalidatePath } from "next/cache";
import { z } from "zod";
import type { ActionResult } from "@/components/use-action";
import { currentBuyer } from "@/lib/auth/session";
import { AppError } from "@/lib/errors";
import {
  apiKeyExpiryDaysSchema,
  apiKeyPermissionSchema,
  createApiKey,
  replaceApiKey,
  revokeApiKey,
  type ApiKeyPermission,
} from "@/lib/keys";

/**
 * Key mutations of the dashboard. Each checks the session itself (an action is a public POST
 * endpoint) and validates its input with zod. Next.js refuses actions whose Origin is not this
 * site, which is the CSRF protection; the session cookie is SameSite=Lax as well.
 */

export type CreatedKey = {
  id: string;
  name: string;
  permission: ApiKeyPermission;
  secret: string;
  expiresAt: string;
  /** Something that went wrong after the key was made (it must still be shown: it exists). */
  warning?: string;
};
export type KeyActionResult = ActionResult<{ key?: CreatedKey }>;

const expiryField = z.coerce.number().pipe(apiKeyExpiryDaysSchema);
const createKeySchema = z.object({
  name: z.string().trim().min(1, "Give the key a name.").max(100, "Names are at most 100 characters."),
  expiresInDays: expiryField,
  permission: apiKeyPermissionSchema,
});
const keyIdSchema = z.string().regex(/^key_[0-9a-f]{32}$/, "Unknown key.");
const replaceKeySchema = z.object({ keyId: keyIdSchema, expiresInDays: expiryField, revokeOld: z.boolean() });

export async function createKeyAction(input: {
  name: string;
  expiresInDays: number | string;
  permission: string;
}): Promise<KeyActionResult> {
  return keyMutation(async (buyerId) => {
    const parsed = createKeySchema.safeParse(input);
    if (!parsed.success) return { ok: false, error: parsed.error.issues[0]?.message ?? "Invalid input." };
    return { ok: true, key: created(await createApiKey({ buyerId, ...parsed.data })) };
  });
}

export async function replaceKeyAction(input: {
  keyId: string;
  expiresInDays: number | string;
  revokeOld: boolean;
}): Promise<KeyActionResult> {
  return keyMutation(async (buyerId) => {
    const parsed = replaceKeySchema.safeParse(input);
    if (!parsed.success) return { ok: false, error: parsed.error.issues[0]?.message ?? "Invalid input." };
    const { keyId, expiresInDays, revokeOld } = parsed.data;
    const key = created(await replaceApiKey({ buyerId, keyId, expiresInDays }));
    if (revokeOld) {
      // The new key exists now, so its secret is returned whatever happens to the old one.
      await revokeApiKey(keyId, { buyerId }).catch(() => {
        key.warning = "The old key could not be revoked. Revoke it from the list.";
      });
    }
    return { ok: true, key };
  });
}

export async function revokeKeyAction(keyId: string): Promise<KeyActionResult> {
  return keyMutation(async (buyerId) => {
    const parsed = keyIdSchema.safeParse(keyId);
    if (!parsed.success) return { ok: false, error: "Unknown key." };
    await revokeApiKey(parsed.data, { buyerId });
    return { ok: true };
  });
}

async function keyMutation(run: (buyerId: string) => Promise<KeyActionResult>): Promise<KeyActionResult> {
  const buyer = await currentBuyer();
  if (!buyer) return { ok: false, error: "Your session has ended. Sign in again." };
  try {
    const result = await run(buyer.id);
    revalidatePath("/keys");
    return result;
  } catch (error) {
    if (error instanceof AppError) return { ok: false, error: error.message };
    throw error;
  }
}

function created(key: Awaited<ReturnType<typeof createApiKey>>): CreatedKey {
  return {
    id: key.id,
    name: key.name,
    permission: key.permission,
    secret: key.secret,
    expiresAt: key.expiresAt.toISOString(),
  };
}
