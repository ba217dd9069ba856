import { db, sqlQuery } from "../db/client";
import { errorFields, logger } from "../log";
import { formulaSafe } from "../csv-formulas";
import { formatDate } from "../format";

/**
 * The security log of a buyer's account: sign-ins and refused sign-in links, keys created,
 * replaced, revoked and expired, share links created, revoked and opened, webhook endpoints added,
 * changed (disabled, enabled, secret rotated) and deleted, export destinations added, changed,
 * tested and deleted; with the time, who did it
 * (a dashboard session, the operator's CLI, or the system) and the client's address. Kept one year.
 * Recording never fails what it records: a write that fails is logged for the operator instead.
 */
export const SECURITY_EVENT_KINDS = [
  "sign_in",
  "sign_in_link_refused",
  "key_created",
  "key_replaced",
  "key_revoked",
  "key_expired",
  "share_created",
  "share_revoked",
  "share_opened",
  "webhook_created",
  "webhook_changed",
  "webhook_deleted",
  "export_destination_created",
  "export_destination_changed",
  "export_destination_tested",
  "export_destination_deleted",
] as const;
export type SecurityEventKind = (typeof SECURITY_EVENT_KINDS)[number];

export const SECURITY_EVENT_LABELS: Record<SecurityEventKind, string> = {
  sign_in: "Signed in",
  sign_in_link_refused: "Sign-in link refused",
  key_created: "Key created",
  key_replaced: "Key replaced",
  key_revoked: "Key revoked",
  key_expired: "Key expired",
  share_created: "Share link created",
  share_revoked: "Share link revoked",
  share_opened: "Share link opened",
  webhook_created: "Webhook endpoint added",
  webhook_changed: "Webhook endpoint changed",
  webhook_deleted: "Webhook endpoint deleted",
  export_destination_created: "Export destination added",
  export_destination_changed: "Export destination changed",
  export_destination_tested: "Export destination tested",
  export_destination_deleted: "Export destination deleted",
};

/** The kinds by what they are about: the Security log's intro names each group and its filter offers them so. */
export const SECURITY_EVENT_GROUPS: readonly { name: string; kinds: readonly SecurityEventKind[] }[] = [
  { name: "Sign-ins", kinds: ["sign_in", "sign_in_link_refused"] },
  { name: "API keys", kinds: ["key_created", "key_replaced", "key_revoked", "key_expired"] },
  { name: "Share links", kinds: ["share_created", "share_opened", "share_revoked"] },
  { name: "Webhook endpoints", kinds: ["webhook_created", "webhook_changed", "webhook_deleted"] },
  {
    name: "Export destinations",
    kinds: [
      "export_destination_created",
      "export_destination_changed",
      "export_destination_tested",
      "export_destination_deleted",
    ],
  },
];

export type Actor = { actor: "session" | "operator" | "system" | "share_link"; ip?: string | null };
export const OPERATOR: Actor = { actor: "operator" };

export const SECURITY_LOG_RETENTION_DAYS = 365;

export async function recordSecurityEvent(
  buyerId: string,
  kind: SecurityEventKind,
  by: Actor,
  subject: { id?: string; detail: string },
): Promise<void> {
  await db()
    .securityEvent.create({
      data: {
        buyerId,
        kind,
        actor: by.actor,
        ip: by.ip ?? null,
        subjectId: subject.id ?? null,
        detail: subject.detail,
      },
    })
    .catch((error: unknown) => logger().warn({ kind, ...errorFields(error) }, "security log: event not recorded"));
}

/** A new share link's event: its order, its label, and when it expires written as the log writes its dates. */
export function shareCreatedDetail(orderName: string, label: string | null, expiresAt: Date | null): string {
  const expiry = expiresAt ? `expires ${formatDate(expiresAt)}` : "never expires";
  return `Share link of “${orderName}”${label ? ` (${label})` : ""}, ${expiry}`;
}

/** A share link's opens count up in one row per link: the first open's time, the last's, and how many. */
export async function recordShareOpened(buyerId: string, linkId: string, orderName: string, ip: string | null) {
  await sqlQuery(
    `INSERT INTO security_events (id, buyer_id, kind, actor, ip, subject_id, detail)
     VALUES ('sev_' || md5($2 || ':opened'), $1, 'share_opened', 'share_link', $3, $2, $4)
     ON CONFLICT (id) DO UPDATE SET count = security_events.count + 1, last_at = now(), ip = EXCLUDED.ip`,
    [buyerId, linkId, ip, `Share link of “${orderName}”`],
  ).catch((error: unknown) => logger().warn({ ...errorFields(error) }, "security log: share opening not recorded"));
}

/** Keys that expired unrevoked get their "expired" event once (its id is made from the key's), at their expiry time. */
async function recordExpiredKeys(buyerId: string): Promise<void> {
  await sqlQuery(
    `INSERT INTO security_events (id, buyer_id, kind, actor, subject_id, detail, created_at, last_at)
     SELECT 'sev_' || md5(id || ':expired'), buyer_id, 'key_expired', 'system', id, name, expires_at, expires_at
     FROM api_keys WHERE buyer_id = $1 AND revoked_at IS NULL AND expires_at <= now()
     ON CONFLICT (id) DO NOTHING`,
    [buyerId],
  );
}

export type SecurityEventView = {
  id: string;
  kind: SecurityEventKind;
  actor: string;
  /** Who did it, as the log shows it: "You (dashboard)", or the share link that was opened by its label. */
  actorName: string;
  ip: string | null;
  detail: string;
  count: number;
  createdAt: Date;
  lastAt: Date;
};

/** The buyer's log, newest first, optionally of one kind; at most `limit` events. */
export async function listSecurityEvents(
  buyerId: string,
  { kind, limit = 500 }: { kind?: SecurityEventKind; limit?: number } = {},
): Promise<SecurityEventView[]> {
  await recordExpiredKeys(buyerId);
  await db().securityEvent.deleteMany({
    where: { buyerId, createdAt: { lt: new Date(Date.now() - SECURITY_LOG_RETENTION_DAYS * 86_400_000) } },
  });
  const events = await db().securityEvent.findMany({
    where: { buyerId, ...(kind ? { kind } : {}) },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    take: limit,
    select: {
      id: true,
      kind: true,
      actor: true,
      ip: true,
      subjectId: true,
      detail: true,
      count: true,
      createdAt: true,
      lastAt: true,
    },
  });
  const opened = events.filter((event) => event.kind === "share_opened" && event.subjectId);
  const links = new Map(
    (opened.length
      ? await db().shareLink.findMany({
          where: { id: { in: opened.map((event) => event.subjectId!) }, order: { buyerId } },
          select: { id: true, label: true, tokenPrefix: true },
        })
      : []
    ).map((link) => [link.id, link]),
  );
  return events.map(({ subjectId, ...event }) => ({
    ...event,
    kind: event.kind as SecurityEventKind,
    actorName: actorName(event, subjectId ? links.get(subjectId) : undefined),
  }));
}

const ACTOR_NAMES: Record<string, string> = { session: "You (dashboard)", operator: "Operator", system: "System" };

/**
 * A share link's opens are its holder's doing, whoever that is: the link is named by its label, else its
 * token's first characters as the order page lists it (rows recorded before said "system": by kind, not actor).
 */
function actorName(
  event: { kind: string; actor: string },
  link: { label: string | null; tokenPrefix: string } | undefined,
): string {
  if (event.kind !== "share_opened") return ACTOR_NAMES[event.actor] ?? event.actor;
  if (!link) return "A share link";
  return link.label ? `Share link “${link.label}”` : `Share link ${link.tokenPrefix}…`;
}

/** The log as CSV (RFC 4180), a header line first. */
export function securityEventsCsv(events: SecurityEventView[]): string {
  const cell = (value: string | number | null) => {
    const text = value === null ? "" : String(value);
    // Quoted, inner quotes doubled; never run by a spreadsheet as a formula (lib/csv-formulas.ts).
    return `"${formulaSafe(text).replace(/"/g, '""')}"`;
  };
  const lines = [["time", "event", "detail", "actor", "ip", "count", "last"].map(cell).join(",")];
  for (const event of events) {
    lines.push(
      [
        event.createdAt.toISOString(),
        event.kind,
        event.detail,
        event.actor,
        event.ip,
        event.count,
        event.lastAt.toISOString(),
      ]
        .map(cell)
        .join(","),
    );
  }
  return lines.join("\r\n") + "\r\n";
}
