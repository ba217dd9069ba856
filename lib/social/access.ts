import { db } from "../db/client";

/** Whether the operator has enabled Social API access for the account (scrape:read keys need it). */
export async function socialAccessEnabled(buyerId: string): Promise<boolean> {
  const access = await db().socialAccess.findUnique({ where: { buyerId }, select: { enabled: true } });
  return access?.enabled ?? false;
}
