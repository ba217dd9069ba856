import Link from "next/link";
import type { ReactNode } from "react";
import { linkClass } from "@/components/ui";
import { CURL, KEY_VARIABLE } from "@/lib/docs/commands";
import { TABLE_EXAMPLE } from "@/lib/docs/table-examples";

export type Step = { id?: string; title: string; body: ReactNode; code: string };

const AUTH = `-H "Authorization: Bearer $${KEY_VARIABLE}"`;
const urlencoded = (query: Record<string, string>) =>
  Object.entries(query).map(([name, value]) => `  --data-urlencode ${JSON.stringify(`${name}=${value}`)}`);

/** The getting-started steps for tables: versions, quality, changes, rows, SQL and subsets, numbered from `first`. */
export function tableSteps(origin: string, orderId: string, first: number): Step[] {
  const { refreshed, version, table, rows, subset, sql } = TABLE_EXAMPLE;
  const tables = `${origin}/api/v1/orders/${orderId}/tables`;
  return [
    {
      id: "tables",
      title: `${first}. Follow a table: versions, quality reports, change files`,
      body: (
        <>
          Each data file of an order is a table, and each refresh the seller publishes becomes its next numbered
          version, whole or not at all. Before a version goes out it is measured against the one before it (row count,
          deleted rows, null fractions, distinct values, distribution shift); a refresh that lost many rows is held
          back, and the version&apos;s <code>quality</code> says whether it passed. Its quality report gives every
          figure; its change file lists what it inserted, updated and deleted, so you load only the difference.
        </>
      ),
      code: [
        `TABLE=${tables}/${refreshed}`,
        `${CURL} ${AUTH} "$TABLE/versions?limit=10"`,
        `${CURL} ${AUTH} "$TABLE/versions/${version}/quality"`,
        `# what version ${version} changed: the columns plus _change_type (insert, delete, update_preimage, update_postimage)`,
        `${CURL} -L ${AUTH} "$TABLE/versions/${version}/changes" -o changes.parquet`,
      ].join("\n"),
    },
    {
      id: "rows",
      title: `${first + 1}. Read rows without downloading`,
      body: (
        <>
          Ask for the columns you need and the rows that match <code>where</code>, sorted by <code>order_by</code>, up
          to 1,000 a page; continue with <code>offset=next_offset</code>. <code>where</code> takes comparisons,{" "}
          <code>AND</code>/<code>OR</code>/<code>NOT</code>, <code>IS NULL</code>, <code>IN</code>, <code>BETWEEN</code>
          , <code>LIKE</code>, literals and a few functions (<code>lower</code>, <code>year</code>,{" "}
          <code>contains</code>, ...):{" "}
          <Link href="/docs/api#readTableRows" className={linkClass}>
            the full list
          </Link>
          . Anything else is refused with a 400 that names the offending word.
        </>
      ),
      code: [`${CURL} ${AUTH} --get \\`, `  ${tables}/${table}/rows \\`, urlencoded(rows).join(" \\\n")].join("\n"),
    },
    {
      id: "sql",
      title: `${first + 2}. Ask a SQL question`,
      body: (
        <>
          One read-only <code>SELECT</code> over the order&apos;s tables, each by its name (its current version),{" "}
          <code>&quot;name@3&quot;</code> (version 3) or <code>&quot;name@changes&quot;</code> (every change row with{" "}
          <code>_change_type</code> and <code>_commit_version</code>). It runs server-side whatever the tables&apos;
          size, reads only this order&apos;s data and stops after 10 seconds; the answer holds at most 1,000 rows.
        </>
      ),
      code: [`${CURL} ${AUTH} --get ${origin}/api/v1/orders/${orderId}/sql \\`, urlencoded(sql).join(" \\\n")].join(
        "\n",
      ),
    },
    {
      id: "subsets",
      title: `${first + 3}. Take the matching rows as a file`,
      body: (
        <>
          A subset is every row that matches <code>where</code>, the columns you ask, however many, as one Parquet, CSV
          or JSON Lines file. It is made for you: the answer is 202 with <code>Retry-After</code> until it is ready,
          then the same redirect to a signed link as a download. The same request within 24 hours gets the same file.
        </>
      ),
      code: [
        `URL="${tables}/${table}/subset?${new URLSearchParams(subset)}"`,
        `while code=$(${CURL} -s -o /dev/null -w '%{http_code}' ${AUTH} "$URL") &&`,
        `  [ "$code" = 202 ]; do sleep 5; done`,
        `${CURL} -L ${AUTH} "$URL" -o subset.${subset.format}`,
      ].join("\n"),
    },
  ];
}
