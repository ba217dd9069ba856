import { jobTransaction } from "../queue";
import { emitEvent } from "../webhooks/emit";
import { durationWords } from "./durations";
import { noticeView } from "./notices";

/**
 * The watch on each table's promised cadence (docs/tables.md, "What a table promises"): a table with a cadence whose next
 * version is not made by its expected_by (the current version's time plus the cadence plus its grace)
 * gets a `delay` notice by itself, with its `table.notice` event, once per lateness. Every worker runs
 * this each minute; the notice is recorded only by the instance whose update moved the table's
 * late_notice_for to that expected_by (the row lock makes the others see it done), so instances
 * never announce a lateness twice. The next version moves expected_by on, which ends the lateness
 * (its `table.updated` says `freshness.late: false`). Times are the database's clock, one for every
 * instance. Only delivered orders' tables are watched: nobody waits on another's.
 */
export async function announceLateTables(): Promise<{ announced: number }> {
  return jobTransaction(async (tx) => {
    const late = await tx.$queryRaw<
      { tableId: string; table: string; orderId: string; buyerId: string; due: Date; every: number; grace: number }[]
    >`
      UPDATE order_tables t SET late_notice_for = due.expected_by
      FROM (
        SELECT w.id, v.created_at + make_interval(secs => w.cadence_seconds + w.grace_seconds) AS expected_by
        FROM order_tables w JOIN table_versions v ON v.table_id = w.id AND v.version = w.current_version
        WHERE w.cadence_seconds IS NOT NULL
      ) due, orders o
      WHERE t.id = due.id AND o.id = t.order_id AND o.status = 'delivered'
        AND due.expected_by <= now() AND t.late_notice_for IS DISTINCT FROM due.expected_by
      RETURNING t.id AS "tableId", t.name AS "table", t.order_id AS "orderId", o.buyer_id AS "buyerId",
        due.expected_by AS due, t.cadence_seconds AS every, t.grace_seconds AS grace`;
    for (const table of late) {
      const row = await tx.tableNotice.create({
        data: { tableId: table.tableId, type: "delay", message: delayMessage(table), effectiveAt: table.due },
        select: { id: true, type: true, message: true, effectiveAt: true, createdAt: true },
      });
      await emitEvent(tx, {
        buyerId: table.buyerId,
        type: "table.notice",
        data: { order_id: table.orderId, table: table.table, ...noticeView(row) },
        at: row.createdAt,
      });
    }
    return { announced: late.length };
  });
}

/** `YYYY-MM-DD HH:MM UTC`, as the notice names the time a version was due. */
export function utcMinute(at: Date): string {
  return `${at.toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

function delayMessage(table: { table: string; due: Date; every: number; grace: number }): string {
  const grace = table.grace ? `, with ${durationWords(table.grace)} of grace` : "";
  return (
    `A new version of ${table.table} was due by ${utcMinute(table.due)} (one every ${durationWords(table.every)}${grace}) ` +
    "and has not come yet. This notice is posted by itself when a table's refresh is late; the next version ends it."
  );
}
