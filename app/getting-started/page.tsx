import type { Metadata } from "next";
import Link from "next/link";
import { CodeBlock } from "@/components/code-block";
import { linkClass } from "@/components/ui";
import { apiDocument } from "@/lib/api/routes";
import {
  clientSyncCommands,
  CURL,
  downloadFileCommand,
  downloadFormatCommand,
  exportKeyCommand,
  listOrdersCommand,
  readOrderCommand,
  type ExampleIds,
} from "@/lib/docs/commands";
import { apiExamples } from "@/lib/docs/examples";
import { mcpClientConfig } from "@/lib/docs/mcp-config";
import type { OpenApiDocument } from "@/lib/docs/reference";
import { SHARING_PATH, SHARING_PROFILE_FILE_NAME } from "@/lib/sharing/profile";
import { siteOrigin } from "@/lib/site";
import { tableSteps, type Step } from "./table-steps";

export const metadata: Metadata = { title: "Getting started" };

/** Delta Sharing: the tools data teams already have, reading orders with the profile file. */
function deltaSharingStep(origin: string, { orderId }: ExampleIds): Step {
  const table = `${SHARING_PROFILE_FILE_NAME}#orders.${orderId}.products`;
  return {
    id: "delta-sharing",
    title: "12. Read orders from pandas, Spark or Power BI",
    body: (
      <>
        Every order is also served over Delta Sharing, the open protocol those tools speak: one share,{" "}
        <code>orders</code>; one schema per delivered order (its id); one table per table of the order, by its name,
        with its versions (time travel) and its change data feed. Create a <code>datasets:read</code> key and choose{" "}
        <strong>Download sharing profile</strong> while it is shown. Python needs <code>pip install delta-sharing</code>
        ; Power BI&apos;s Delta Sharing connector takes the URL and the key.
      </>
    ),
    code: [
      `# pandas`,
      `delta_sharing.load_as_pandas("${table}")`,
      `delta_sharing.load_table_changes_as_pandas("${table}", starting_version=2)`,
      `# Spark`,
      `spark.read.format("deltaSharing").load("${table}")`,
      `# Power BI: Get data > Delta Sharing, server URL ${origin}${SHARING_PATH}, token: the key`,
    ].join("\n"),
  };
}

export default async function GettingStartedPage() {
  const origin = await siteOrigin();
  // The API reference's ids (the demo account's where it is loaded), so both pages show the same working commands.
  const { ids, downloadFile } = await apiExamples(apiDocument(`${origin}/api/v1`) as unknown as OpenApiDocument);
  const steps: Step[] = [
    {
      title: "1. Create a key",
      body: (
        <>
          Sign in, open{" "}
          <Link href="/keys" className={linkClass}>
            API keys
          </Link>{" "}
          and create a <code>datasets:read</code> key named after the integration that will use it. Copy the secret when
          it is shown: it is shown only once. Store it in your server&apos;s secret store, never in browser or mobile
          code.
        </>
      ),
      code: exportKeyCommand,
    },
    {
      title: "2. Sync with a client",
      body: (
        <>
          The clients do what every integration needs: page through your orders, wait out the rate limit (they pace
          themselves, and honour <code>Retry-After</code>), resume broken downloads, check each file&apos;s SHA-256 and
          remember what is already fetched. <code>sync</code> mirrors every delivered order into{" "}
          <code>DIR/&lt;order id&gt;/&lt;file name&gt;</code>; run it again (e.g. from cron) to fetch only what is new.
          Python: one file, standard library only (Python 3.9+). TypeScript/Node.js: <code>@dataset-access/client</code>
          , with the <code>dataset-access</code> command.
        </>
      ),
      code: clientSyncCommands(origin),
    },
    {
      title: "3. Or call the API: list your orders",
      body: (
        <>
          Newest first, up to 50 per page. Continue with <code>offset=next_offset</code> until <code>next_offset</code>{" "}
          is <code>null</code>.
        </>
      ),
      code: listOrdersCommand(origin),
    },
    {
      title: "4. Read one order",
      body: (
        <>Its status and its files (name, size, type, SHA-256). Files are downloadable only while it is delivered.</>
      ),
      code: readOrderCommand(origin, ids),
    },
    {
      title: "5. Download a file",
      body: (
        <>
          The API answers with a redirect to a signed link valid for 5 minutes, so follow redirects (<code>-L</code>).
          Resume a broken download with <code>-C -</code>, and check the SHA-256 against the order&apos;s file list.
        </>
      ),
      code: `${downloadFileCommand(origin, ids)}\nsha256sum ${downloadFile.fileName}`,
    },
    {
      title: "6. Look inside before you download",
      body: (
        <>
          Every CSV, TSV, JSON, JSON Lines and Parquet file is profiled after delivery: its <code>format</code>,{" "}
          <code>rows</code> and <code>columns</code> are in the order&apos;s file list, and <code>/preview</code> gives
          its first rows (up to 100):{" "}
          <Link href="/docs/api#previewFile" className={linkClass}>
            a real answer from the demo
          </Link>
          .
        </>
      ),
      code: `${CURL} -H "Authorization: Bearer $DATASET_ACCESS_KEY" \\\n  "${origin}/api/v1/orders/${ids.orderId}/files/${ids.fileId}/preview?limit=5"`,
    },
    {
      title: "7. Get the data as Parquet, CSV or JSON Lines",
      body: (
        <>
          Add <code>format=parquet</code> (or <code>csv</code>, <code>jsonl</code>) to a download, or{" "}
          <code>--format</code> to a client&apos;s <code>download</code> and <code>sync</code>: each rendition has its
          own SHA-256, checked by the clients. While one is being made the API answers 202 with <code>Retry-After</code>
          ; the clients wait. Then one line reads it into pandas (Python client, pandas installed) or DuckDB.
        </>
      ),
      code: [
        downloadFormatCommand(origin, ids),
        `python3 dataset_access.py download ${ids.orderId} ${ids.fileId} --format parquet`,
        `# pandas: df = dataset_access.Client().read_pandas("${ids.orderId}", "${ids.fileId}")`,
        `# DuckDB: duckdb.sql("SELECT * FROM 'products.parquet'").df()`,
      ].join("\n"),
    },
    ...tableSteps(origin, ids.orderId, 8),
    deltaSharingStep(origin, ids),
    {
      id: "mcp",
      title: "13. Let an AI agent read your datasets (MCP)",
      body: (
        <>
          Agents that speak the Model Context Protocol (Claude, VS Code&apos;s Copilot, Cursor and others) connect to{" "}
          <code>{origin}/api/mcp</code> with a <code>datasets:read</code> key in the <code>Authorization</code> header.
          They can list your orders, describe tables, run read-only SQL, read what a version changed and hand out
          download links, for this account&apos;s orders only; each call counts toward the 60 requests per minute.
        </>
      ),
      code: mcpClientConfig(origin),
    },
  ];
  return (
    <article className="space-y-8">
      <header className="space-y-2">
        <h1 className="text-2xl font-bold tracking-tight">Getting started with the API</h1>
        <p className="max-w-2xl text-slate-600">
          Your backend reads your paid orders and downloads delivered files over HTTPS with an API key, follows each
          table&apos;s versions, quality reports and change files, reads rows filtered with <code>where</code>, asks SQL
          questions and takes subsets as files, all without downloading everything; pandas, Spark and Power BI read the
          same tables over Delta Sharing, and AI agents over MCP. The API is read-only and allows 60 requests per minute
          per account; above that it answers 429 with <code>Retry-After</code>. Errors are{" "}
          <code>application/problem+json</code> with a stable <code>code</code>.
        </p>
      </header>
      {steps.map((step) => (
        <section key={step.title} id={step.id} className="scroll-mt-20 space-y-3">
          <h2 className="text-lg font-semibold">{step.title}</h2>
          <p className="max-w-3xl text-slate-700">{step.body}</p>
          <CodeBlock
            label={step.title
              .replace(/^\d+\. /, "")
              .replace(/^Or call the API: /, "")
              .toLowerCase()}
          >
            {step.code}
          </CodeBlock>
        </section>
      ))}
      <p>
        Every endpoint, field and error code:{" "}
        <Link href="/docs/api" className={linkClass}>
          API reference
        </Link>
        .
      </p>
    </article>
  );
}
