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
      title: "2. List your orders",
      body: (
        <>
          Newest first, up to 50 per page. Continue with <code>offset=next_offset</code> until <code>next_offset</code>{" "}
          is <code>null</code>.
        </>
      ),
      code: `curl -H "Authorization: Bearer $DATASET_ACCESS_KEY" \\\n  "${origin}/api/v1/orders?limit=50&offset=0"`,
    },
    {
      title: "3. Read one order",
      body: (
        <>Its status and its files (name, size, type, SHA-256). Files are downloadable only while it is delivered.</>
      ),
      code: `curl -H "Authorization: Bearer $DATASET_ACCESS_KEY" \\\n  ${origin}/api/v1/orders/ord_...`,
    },
    {
      title: "4. Download a file",
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
          <CodeBlock label={step.title.slice(3).toLowerCase()}>{step.code}</CodeBlock>
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
