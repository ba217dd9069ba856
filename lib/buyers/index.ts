import { z } from "zod";
import { db } from "../db/client";
import { AppError } from "../errors";

const emailSchema = z
  .string()
  .trim()
  .toLowerCase()
  .pipe(z.email({ message: "not a valid e-mail address" }));

export type Buyer = { id: string; email: string };

/**
 * Creates the buyer account for a verified e-mail (operators vouch for it: the datasets were
 * bought with it). Idempotent: an existing account is returned with `created: false`.
 */
export async function createBuyer(email: string, now = new Date()): Promise<Buyer & { created: boolean }> {
  const normalised = parseEmail(email);
  const existing = await db().user.findUnique({ where: { email: normalised }, select: { id: true, email: true } });
  if (existing) return { ...existing, created: false };
  const buyer = await db().user.upsert({
    where: { email: normalised },
    create: { email: normalised, emailVerified: now },
    update: {},
    select: { id: true, email: true },
  });
  return { ...buyer, created: true };
}

export async function findBuyerByEmail(email: string): Promise<Buyer> {
  const normalised = parseEmail(email);
  const buyer = await db().user.findUnique({ where: { email: normalised }, select: { id: true, email: true } });
  if (!buyer) {
    throw new AppError(
      "buyer_not_found",
      `No buyer account with e-mail ${normalised}. Create it first with buyer:create.`,
    );
  }
  return buyer;
}

function parseEmail(email: string): string {
  const parsed = emailSchema.safeParse(email);
  if (!parsed.success) throw new AppError("invalid_argument", `"${email}" is not a valid e-mail address.`);
  return parsed.data;
}
