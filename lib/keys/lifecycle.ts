import { db, type Prisma } from "../db/client";
import { formatDate } from "../format";
import { jobTransaction, QUEUES, sendJob } from "../queue";
import { logger } from "../log";
import { recordSecurityEvent } from "../security/log";
import { authBaseUrl } from "../site";
import { emitEvent } from "../webhooks/emit";
import type { KeyEventData } from "../webhooks/events";
import { permissionFromStored } from "./permissions";

const DAY_MS = 24 * 60 * 60 * 1000;
/** Reminders before expiry: kind and how long before. The nearer one supersedes the farther. */
const REMINDERS = [
  { kind: "7d", before: 7 * DAY_MS, words: "in 7 days" },
  { kind: "1d", before: DAY_MS, words: "tomorrow" },
] as const;
/** Keys that expired longer ago than this get no `key.expired` event (e.g. on the first run after an upgrade). */
const EXPIRED_EVENT_WINDOW_MS = 7 * DAY_MS;

type KeyRow = { id: string; buyerId: string; name: string; permission: string; expiresAt: Date };
const keySelect = { id: true, buyerId: true, name: true, permission: true, expiresAt: true } as const;

/** A key event's data: the contract's `{id, name, permission, expires_at}`. */
function keyEventData(key: KeyRow): KeyEventData {
  return {
    id: key.id,
    name: key.name,
    permission: permissionFromStored[key.permission as keyof typeof permissionFromStored],
    expires_at: key.expiresAt.toISOString(),
  };
}

/**
 * Claims one reminder of one key: true for the one caller (worker, restart) that inserted its row,
 * inside `tx`, so its event and e-mail are sent once or, if the transaction fails, not at all.
 */
async function claim(tx: Prisma.TransactionClient, keyId: string, kind: string, at: Date): Promise<boolean> {
  const inserted = await tx.$executeRaw`
    INSERT INTO key_reminders (key_id, kind, sent_at) VALUES (${keyId}, ${kind}, ${at}) ON CONFLICT DO NOTHING`;
  return inserted === 1;
}

/**
 * The key lifecycle's periodic work (a job every few minutes): expiry reminders (e-mail and
 * `key.expiring`) 7 days and 1 day before, `key.expired`, and the revocation of replaced keys
 * whose overlap has ended (they were refused from that instant already: this records it).
 */
export async function runKeyLifecycle(
  now = new Date(),
): Promise<{ reminded: number; expired: number; retired: number }> {
  let reminded = 0;
  for (const [index, reminder] of REMINDERS.entries()) {
    const nearer = REMINDERS[index + 1];
    const keys = await db().apiKey.findMany({
      where: {
        revokedAt: null,
        OR: [{ retiresAt: null }, { retiresAt: { gt: now } }],
        expiresAt: {
          gt: nearer ? new Date(now.getTime() + nearer.before) : now,
          lte: new Date(now.getTime() + reminder.before),
        },
        reminders: { none: { kind: reminder.kind } },
      },
      select: { ...keySelect, buyer: { select: { email: true } } },
    });
    for (const key of keys) {
      const sent = await jobTransaction(async (tx) => {
        if (!(await claim(tx, key.id, reminder.kind, now))) return false;
        await emitEvent(tx, { buyerId: key.buyerId, type: "key.expiring", data: keyEventData(key), at: now });
        await sendJob(QUEUES.mail, expiryReminder(key, key.buyer.email, reminder.words), { tx });
        return true;
      });
      if (sent) reminded++;
    }
  }

  let expired = 0;
  const expiredKeys = await db().apiKey.findMany({
    where: {
      revokedAt: null,
      expiresAt: { lte: now, gt: new Date(now.getTime() - EXPIRED_EVENT_WINDOW_MS) },
      reminders: { none: { kind: "expired" } },
    },
    select: keySelect,
  });
  for (const key of expiredKeys) {
    const sent = await jobTransaction(async (tx) => {
      if (!(await claim(tx, key.id, "expired", now))) return false;
      await emitEvent(tx, { buyerId: key.buyerId, type: "key.expired", data: keyEventData(key), at: now });
      return true;
    });
    if (sent) expired++;
  }

  const retiring = await db().apiKey.findMany({
    where: { revokedAt: null, retiresAt: { lte: now } },
    select: { id: true, buyerId: true, name: true, retiresAt: true },
  });
  for (const key of retiring) {
    const { count } = await db().apiKey.updateMany({
      where: { id: key.id, revokedAt: null },
      data: { revokedAt: key.retiresAt },
    });
    if (count === 1) {
      await recordSecurityEvent(
        key.buyerId,
        "key_revoked",
        { actor: "system" },
        {
          id: key.id,
          detail: `${key.name} (its replacement's overlap ended)`,
        },
      );
    }
  }
  if (reminded + expired + retiring.length > 0) {
    logger().info({ reminded, expired, retired: retiring.length }, "key lifecycle");
  }
  return { reminded, expired, retired: retiring.length };
}

function expiryReminder(key: KeyRow, to: string, when: string) {
  const keysPage = `${authBaseUrl()}/keys`;
  return {
    to,
    subject: `Your API key “${key.name}” expires ${when}`,
    text: [
      `Your Dataset Access API key “${key.name}” expires on ${formatDate(key.expiresAt)}.`,
      "",
      "Requests with it are refused from then on. Replace it before that: the new key can overlap with",
      "the old one (1 hour, 24 hours or 7 days) while you roll it out.",
      "",
      `Replace it here: ${keysPage}`,
    ].join("\n"),
  };
}
