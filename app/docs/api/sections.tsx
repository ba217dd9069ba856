import Link from "next/link";
import { CodeBlock } from "@/components/code-block";
import { linkClass } from "@/components/ui";
import { DATASETS_RATE_LIMIT, DOWNLOAD_LINK_TTL_SECONDS } from "@/lib/contract";
import { mcpCallCommand, sharingQueryCommand, sharingTablesCommand, type ExampleIds } from "@/lib/docs/commands";
import { mcpClientConfig } from "@/lib/docs/mcp-config";
import { MCP_PATH } from "@/lib/mcp/path";
import { SHARING_PATH, SHARING_PROFILE_FILE_NAME } from "@/lib/sharing/profile";

/** The API reference's Delta Sharing section: what the protocol serves here, in the buyer's words. */
export function DeltaSharingSection({ origin, ids }: { origin: string; ids: ExampleIds }) {
  const table = `${SHARING_PROFILE_FILE_NAME}#orders.${ids.orderId}.products`;
  return (
    <section id="delta-sharing" className="scroll-mt-20 space-y-3" aria-labelledby="delta-sharing-heading">
      <h2 id="delta-sharing-heading" className="text-xl font-semibold">
        Delta Sharing
      </h2>
      <p className="text-slate-700">
        Every delivered order is also served over Delta Sharing, the open protocol that pandas, Spark, Power BI and
        Tableau read, at <code>{`${origin}${SHARING_PATH}`}</code> with the same <code>datasets:read</code> key (and the
        same {DATASETS_RATE_LIMIT.limit} requests a minute). The account has one share, <code>orders</code>; each
        delivered order is a schema named by its id; each of the order&apos;s tables is a table of that schema, with its
        versions (read an older one by number or time) and its change data feed (what each version inserted, updated and
        deleted). Refunded and unfinished orders are not shared, and a refund takes effect at the next request.
      </p>
      <p className="text-slate-700">
        On the{" "}
        <Link href="/keys" className={linkClass}>
          API keys
        </Link>{" "}
        page, create a <code>datasets:read</code> key and choose <strong>Download sharing profile</strong> while its
        secret is shown: the file <code>{SHARING_PROFILE_FILE_NAME}</code> holds the address and the key, so store it as
        you store the key. Each table&apos;s data comes as links to Parquet files valid {DOWNLOAD_LINK_TTL_SECONDS / 60}{" "}
        minutes. Errors answer in the protocol&apos;s own shape, <code>{"{errorCode, message}"}</code>, not as
        problem+json.
      </p>
      <CodeBlock label="delta sharing">
        {[
          `# pandas (pip install delta-sharing)`,
          `delta_sharing.load_as_pandas("${table}")`,
          `delta_sharing.load_table_changes_as_pandas("${table}", starting_version=1)`,
          `# by hand: every table shared, then the files of one table's current version (NDJSON)`,
          sharingTablesCommand(origin),
          sharingQueryCommand(origin, ids),
        ].join("\n")}
      </CodeBlock>
    </section>
  );
}

const MCP_TOOLS: [string, string][] = [
  ["list_orders", "the account's orders, newest first, with their tables"],
  ["get_order", "one order with its files and tables, as GET /orders/{id} answers it"],
  ["describe_table", "a table's columns, rows, key, recent versions, quality report and notices"],
  ["query", "one read-only SELECT over the order's tables, as GET /orders/{id}/sql runs it"],
  ["get_changes", "what each version after a given one inserted, updated and deleted, with the change rows"],
  ["download_link", `signed links valid ${DOWNLOAD_LINK_TTL_SECONDS / 60} minutes to a file or a version's parts`],
];

/** The API reference's MCP section: how an agent connects and what it may do. */
export function McpSection({ origin }: { origin: string }) {
  return (
    <section id="mcp" className="scroll-mt-20 space-y-3" aria-labelledby="mcp-heading">
      <h2 id="mcp-heading" className="text-xl font-semibold">
        MCP (AI agents)
      </h2>
      <p className="text-slate-700">
        AI agents that speak the Model Context Protocol connect to <code>{`${origin}${MCP_PATH}`}</code> (Streamable
        HTTP: each call is one POST answered with JSON) with a <code>datasets:read</code> key in the{" "}
        <code>Authorization</code> header. They read only this account&apos;s orders, never change anything, and their
        SQL runs in the same sandbox as <code>/sql</code>; each request counts toward the {DATASETS_RATE_LIMIT.limit} a
        minute. A tool&apos;s refusal is a result marked as an error whose text is <code>code: detail</code>, with the
        API&apos;s codes. The tools:
      </p>
      <ul className="list-inside list-disc text-sm text-slate-700">
        {MCP_TOOLS.map(([tool, what]) => (
          <li key={tool}>
            <code>{tool}</code>: {what}
          </li>
        ))}
      </ul>
      <CodeBlock label="mcp clients">{`${mcpClientConfig(origin)}\n# by hand: one tool call\n${mcpCallCommand(origin)}`}</CodeBlock>
    </section>
  );
}
