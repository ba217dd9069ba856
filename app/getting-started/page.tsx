import type { Metadata } from "next";
import Link from "next/link";
import { CodeBlock } from "@/components/code-block";
import { linkClass } from "@/components/ui";
import { siteOrigin } from "@/lib/site";

export const metadata: Metadata = { title: "Getting started" };

export default async function GettingStartedPage() {
  const origin = await siteOrigin();
  const steps = [
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
      code: `export DATASET_ACCESS_KEY=dak_...   # the secret, from your secret store`,
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
      code: [
        `export DATASET_ACCESS_URL=${origin}`,
        `# Python 3.9+, nothing to install:`,
        `curl -O ${origin}/clients/dataset_access.py`,
        `python3 dataset_access.py sync --dir ./datasets`,
        `# Node.js 20+ (@dataset-access/client):`,
        `npx dataset-access sync --dir ./datasets`,
      ].join("\n"),
    },
    {
      title: "3. Or call the API: list your orders",
      body: (
        <>
          Newest first, up to 50 per page. Continue with <code>offset=next_offset</code> until <code>next_offset</code>{" "}
          is <code>null</code>.
        </>
      ),
      code: `curl -H "Authorization: Bearer $DATASET_ACCESS_KEY" \\\n  "${origin}/api/v1/orders?limit=50&offset=0"`,
    },
    {
      title: "4. Read one order",
      body: (
        <>Its status and its files (name, size, type, SHA-256). Files are downloadable only while it is delivered.</>
      ),
      code: `curl -H "Authorization: Bearer $DATASET_ACCESS_KEY" \\\n  ${origin}/api/v1/orders/ord_...`,
    },
    {
      title: "5. Download a file",
      body: (
        <>
          The API answers with a redirect to a signed link valid for 5 minutes, so follow redirects (<code>-L</code>).
          Resume a broken download with <code>-C -</code>, and check the SHA-256 against the order&apos;s file list.
        </>
      ),
      code: `curl -L -OJ -H "Authorization: Bearer $DATASET_ACCESS_KEY" \\\n  ${origin}/api/v1/orders/ord_.../files/fil_...\nsha256sum products.csv`,
    },
  ];
  return (
    <article className="space-y-8">
      <header className="space-y-2">
        <h1 className="text-2xl font-bold tracking-tight">Getting started with the API</h1>
        <p className="max-w-2xl text-slate-600">
          Your backend reads your paid orders and downloads delivered files over HTTPS with an API key. The API is
          read-only and allows 60 requests per minute per account; above that it answers 429 with{" "}
          <code>Retry-After</code>. Errors are <code>application/problem+json</code> with a stable <code>code</code>.
        </p>
      </header>
      {steps.map((step) => (
        <section key={step.title} className="space-y-3">
          <h2 className="text-lg font-semibold">{step.title}</h2>
          <p className="max-w-3xl text-slate-700">{step.body}</p>
          <CodeBlock
            label={step.title
              .slice(3)
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
