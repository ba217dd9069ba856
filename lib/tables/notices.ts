import { z } from "zod";
import { db } from "../db/client";
import { AppError } from "../errors";
import { findOrderForOperator } from "../orders/files";
import { jobTransaction } from "../queue";
import { NOTICE_TYPES, type Notice, type NoticeType } from "../schemas/quality";
import { emitEvent } from "../webhooks/emit";

/**
 * An operator's notices to a table's buyers (contract Part 6, AWS Data Exchange's kinds: a schema
 * change, a delay, a deprecation): `table:notice` posts one; the Table object lists those of the
 * last NOTICE_DAYS (lib/contract.ts) days (lib/orders/queries.ts); the `table.notice` webhook event commits with it.
 */

export const NOTICE_MESSAGE_MAX = 2000;

/** Any control character but a newline (a message may have paragraphs; CR LF is taken as a newline). */
const CONTROL_BUT_NEWLINE = /(?!\n)\p{Cc}/u;

export const noticeInputSchema = z.object({
  type: z.enum(NOTICE_TYPES, { error: `The type is one of ${NOTICE_TYPES.join(", ")}.` }),
  message: z
    .string()
    .transform((value) => value.replace(/\r\n/g, "\n").trim())
    .superRefine((value, context) => {
      const problem =
        value.length === 0
          ? "The message is empty."
          : value.length > NOTICE_MESSAGE_MAX
            ? `The message has ${value.length.toLocaleString("en-US")} characters; at most ${NOTICE_MESSAGE_MAX.toLocaleString("en-US")} are allowed.`
            : CONTROL_BUT_NEWLINE.test(value)
              ? "The message contains control characters (only line breaks are allowed)."
              : null;
      if (problem) context.addIssue({ code: "custom", message: problem });
    }),
  effectiveAt: z
    .string()
    .optional()
    .transform((value, context) => {
      if (value === undefined) return null;
      const parsed = z.iso.datetime({ offset: true }).safeParse(value);
      if (!parsed.success) {
        context.addIssue({
          code: "custom",
          message: `The effective date ${JSON.stringify(value.slice(0, 40))} is not an ISO 8601 date and time, e.g. 2026-12-01T00:00:00Z.`,
        });
        return z.NEVER;
      }
      return new Date(value);
    }),
});

export type NoticeInput = { orderId: string; table: string; type: string; message: string; effectiveAt?: string };

type NoticeRow = { id: string; type: NoticeType; message: string; effectiveAt: Date | null; createdAt: Date };

export function noticeView(row: NoticeRow): Notice {
  return {
    id: row.id,
    type: row.type,
    message: row.message,
    effective_at: row.effectiveAt?.toISOString() ?? null,
    created_at: row.createdAt.toISOString(),
  };
}

/**
 * `table:notice`: checks the input (the first problem is an invalid_argument with a sentence),
 * records the notice and its `table.notice` event in one transaction, and returns the Notice.
 */
export async function postNotice(input: NoticeInput): Promise<Notice> {
  const parsed = noticeInputSchema.safeParse(input);
  if (!parsed.success) throw new AppError("invalid_argument", parsed.error.issues[0]!.message);
  await findOrderForOperator(input.orderId);
  const table = await db().orderTable.findUnique({
    where: { orderId_name: { orderId: input.orderId, name: input.table } },
    select: { id: true, name: true, order: { select: { buyerId: true } } },
  });
  if (!table) {
    throw new AppError("table_not_found", `Order ${input.orderId} has no table named ${JSON.stringify(input.table)}.`);
  }
  return jobTransaction(async (tx) => {
    const row = await tx.tableNotice.create({
      data: {
        tableId: table.id,
        type: parsed.data.type,
        message: parsed.data.message,
        effectiveAt: parsed.data.effectiveAt,
      },
      select: { id: true, type: true, message: true, effectiveAt: true, createdAt: true },
    });
    const notice = noticeView(row);
    // Announced with the notice, or not at all.
    await emitEvent(tx, {
      buyerId: table.order.buyerId,
      type: "table.notice",
      data: { order_id: input.orderId, table: table.name, ...notice },
      at: row.createdAt,
    });
    return notice;
  });
}
