import type { Notice as TableNotice } from "@/lib/schemas/quality";
import { formatDate } from "@/lib/format";
import { Notice } from "./ui";

const TYPE_LABEL = { schema_change: "Schema change", delay: "Delay", deprecation: "Deprecation" } as const;

/**
 * The notices the operator posted about an order's tables in the last 90 days (contract Part 6),
 * newest first, as one banner above the tables: a schema change, a delay or a deprecation is
 * something a buyer's pipeline may need to prepare for before the next version arrives.
 */
export function TableNoticeBanner({ tables }: { tables: { name: string; notices: TableNotice[] }[] }) {
  const notices = tables.flatMap((table) => table.notices.map((notice) => ({ table: table.name, ...notice })));
  if (notices.length === 0) return null;
  return (
    <Notice tone="warning">
      <section aria-label="Notices about this order's tables" data-testid="table-notices">
        <h2 className="font-semibold">Notices about {notices.length === 1 ? "a table" : "its tables"}</h2>
        <ul className="mt-1 space-y-2">
          {notices.map((notice) => (
            <li key={notice.id} data-testid="table-notice" data-type={notice.type}>
              <p>
                <strong>{TYPE_LABEL[notice.type]}</strong> · table <code className="font-mono">{notice.table}</code>
                {notice.effective_at && <> · from {formatDate(notice.effective_at)}</>} · posted{" "}
                {formatDate(notice.created_at)}
              </p>
              <p className="break-words whitespace-pre-line">{notice.message}</p>
            </li>
          ))}
        </ul>
      </section>
    </Notice>
  );
}
