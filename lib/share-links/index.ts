import { createHash, randomBytes } from "node:crypto";
import { z } from "zod";
import { CONTROL_CHARACTERS, NAME_MAX_LENGTH } from "../contract";
import { db } from "../db/client";
import { AppError } from "../errors";

/**
 * Share links open one order, read-only, to whoever holds the link: its page and the downloads of
 * its delivered files, nothing else (not the buyer's other orders, the API or the dashboard).
 * The token is `dsl_` + 43 base64url characters (256 random bits); only its SHA-256 is stored,
 * so the link is shown once, when it is made, like an API key.
 */
const TOKEN_PREFIX = "dsl_";
const TOKEN_PATTERN = /^dsl_[A-Za-z0-9_-]{43}$/;

export const SHARE_LINK_EXPIRY_DAYS = [1, 7, 30, 90] as const;
/** Days until the link expires, or "never" (until revoked). */
export const shareLinkExpirySchema = z.union([z.literal("never"), z.literal(SHARE_LINK_EXPIRY_DAYS)], {
  error: `A link expires after ${SHARE_LINK_EXPIRY_DAYS.join(", ")} days, or never.`,
});
export type ShareLinkExpiry = z.infer<typeof shareLinkExpirySchema>;

/** The owner's note of whom a link is for; optional, trimmed, blank means none. */
export const shareLinkLabelSchema = z
  .string()
  .trim()
  .max(NAME_MAX_LENGTH, `A label has at most ${NAME_MAX_LENGTH} characters.`)
  .refine((label) => !CONTROL_CHARACTERS.test(label), "A label cannot contain control characters.")
  .transform((label) => label || null);

export type ShareLinkStatus = "active" | "expired" | "revoked";
export type ShareLinkSummary = {
  id: string;
  display: string;
  label: string | null;
  createdAt: Date;
  expiresAt: Date | null;
  revokedAt: Date | null;
  status: ShareLinkStatus;
  openCount: number;
  lastOpenedAt: Date | null;
  downloadCount: number;
};

/** What an active token opens: one order, scoped to the buyer who shared it. */
export type SharedOrder = {
  active: true;
  linkId: string;
  orderId: string;
  orderName: string;
  buyerId: string;
  /** Who shared it, as the recipient should see it: the buyer's name, else their e-mail address. */
  sharedBy: string;
  expiresAt: Date | null;
};
/** A real link that no longer opens anything, and since when. */
export type ClosedShareLink = { active: false; status: "expired" | "revoked"; since: Date };

const hashToken = (token: string) => createHash("sha256").update(token).digest("hex");

/** Creates a link to one of the buyer's orders. The token is returned here and nowhere else. */
export async function createShareLink(input: {
  buyerId: string;
  orderId: string;
  expiry: ShareLinkExpiry;
  label?: string | null;
  now?: Date;
}): Promise<{ id: string; token: string; expiresAt: Date | null; orderName: string }> {
  const order = await db().order.findFirst({
    where: { id: input.orderId, buyerId: input.buyerId },
    select: { id: true, name: true, status: true },
  });
  if (!order) throw new AppError("order_not_found", `No order ${input.orderId} for this account.`);
  // A link promises downloads: one for an order whose files are refused would only disappoint.
  if (order.status !== "delivered") {
    throw new AppError(
      "order_not_delivered",
      `Share links can be made for delivered orders only; this order is ${order.status}.`,
    );
  }
  const token = TOKEN_PREFIX + randomBytes(32).toString("base64url");
  const now = input.now ?? new Date();
  const expiresAt = input.expiry === "never" ? null : new Date(now.getTime() + input.expiry * 24 * 60 * 60 * 1000);
  const link = await db().shareLink.create({
    data: {
      orderId: order.id,
      tokenHash: hashToken(token),
      tokenPrefix: token.slice(0, 10),
      label: input.label ?? null,
      createdAt: now,
      expiresAt,
    },
    select: { id: true },
  });
  return { id: link.id, token, expiresAt, orderName: order.name };
}

/** The links of one of the buyer's orders, newest first. */
export async function listShareLinks(buyerId: string, orderId: string, now = new Date()): Promise<ShareLinkSummary[]> {
  const links = await db().shareLink.findMany({
    where: { orderId, order: { buyerId } },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    select: {
      id: true,
      tokenPrefix: true,
      label: true,
      createdAt: true,
      expiresAt: true,
      revokedAt: true,
      openCount: true,
      lastOpenedAt: true,
      downloadCount: true,
    },
  });
  return links.map(({ tokenPrefix, ...link }) => ({
    ...link,
    display: `${tokenPrefix}…`,
    status: linkStatus(link, now),
  }));
}

/** Revokes one of the buyer's links; the next request with it is refused. Revoking twice is harmless. */
export async function revokeShareLink(buyerId: string, linkId: string, now = new Date()): Promise<void> {
  const { count } = await db().shareLink.updateMany({
    where: { id: linkId, order: { buyerId }, revokedAt: null },
    data: { revokedAt: now },
  });
  if (count === 0) {
    const exists = await db().shareLink.count({ where: { id: linkId, order: { buyerId } } });
    if (!exists) throw new AppError("not_found", `No share link ${linkId} for this account.`);
  }
}

/**
 * What a token unlocks: one order (and the buyer it belongs to, to scope the reads); for a
 * revoked or expired link, since when; nothing for a malformed or unknown token. Nothing is
 * cached: revocation is immediate.
 */
export async function lookUpShareToken(
  token: string,
  now = new Date(),
): Promise<SharedOrder | ClosedShareLink | undefined> {
  if (!TOKEN_PATTERN.test(token)) return undefined;
  const link = await db().shareLink.findUnique({
    where: { tokenHash: hashToken(token) },
    select: {
      id: true,
      orderId: true,
      expiresAt: true,
      revokedAt: true,
      order: { select: { name: true, buyer: { select: { id: true, name: true, email: true } } } },
    },
  });
  if (!link) return undefined;
  const status = linkStatus(link, now);
  if (status === "revoked") return { active: false, status, since: link.revokedAt! };
  if (status === "expired") return { active: false, status, since: link.expiresAt! };
  const { buyer } = link.order;
  return {
    active: true,
    linkId: link.id,
    orderId: link.orderId,
    orderName: link.order.name,
    buyerId: buyer.id,
    sharedBy: buyer.name?.trim() || buyer.email,
    expiresAt: link.expiresAt,
  };
}

/** Counts a view of the shared page, for the owner's list ("opened 3 times, last …"). */
export async function countShareOpened(linkId: string, now = new Date()): Promise<void> {
  await db().shareLink.update({
    where: { id: linkId },
    data: { openCount: { increment: 1 }, lastOpenedAt: now },
  });
}

/** Counts a download started through the link (a redirect to the file handed out). */
export async function countShareDownload(linkId: string): Promise<void> {
  await db().shareLink.update({ where: { id: linkId }, data: { downloadCount: { increment: 1 } } });
}

function linkStatus(link: { expiresAt: Date | null; revokedAt: Date | null }, now: Date): ShareLinkStatus {
  if (link.revokedAt) return "revoked";
  if (link.expiresAt && link.expiresAt <= now) return "expired";
  return "active";
}
