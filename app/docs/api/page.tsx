import type { Metadata } from "next";
import { buildOpenApiDocument } from "@/lib/api/openapi";
import { apiErrorCatalog } from "@/lib/api/problem";
import { siteOrigin } from "@/lib/site";
import { CodeBlock } from "@/components/code-block";
import { DATASETS_RATE_LIMIT } from "@/lib/contract";
import { SOCIAL_PLATFORMS } from "@/lib/social/platforms";

export const metadata: Metadata = { title: "API reference" };
export const dynamic = "force-dynamic";

type Operation = {
  summary?: string;
  description?: string;
  parameters?: { name: string; in: string; description?: string }[];
};

/** Rendered from the same OpenAPI document as /api/v1/openapi.json, so the two cannot disagree. */
export default async function ApiReferencePage() {
  const origin = await siteOrigin();
  const document = buildOpenApiDocument(`${origin}/api/v1`);
  const paths = Object.entries(document.paths ?? {}) as [string, Record<string, Operation>][];
  return (
    <article className="space-y-10">
      <header className="space-y-3">
        <h1 className="text-3xl font-bold tracking-tight">API reference</h1>
        <p className="max-w-2xl text-slate-600">{document.info.description}</p>
        <p className="text-sm">
          Machine-readable: {/* A JSON document, not a page: a plain link, never client-side navigation. */}
          {/* eslint-disable-next-line @next/next/no-html-link-for-pages */}
          <a className="text-blue-700 underline" href="/api/v1/openapi.json">
            /api/v1/openapi.json
          </a>{" "}
          (OpenAPI 3.1).
        </p>
      </header>

      <section className="space-y-3">
        <h2 className="text-xl font-semibold">Authentication</h2>
        <p className="text-slate-700">
          Every request carries <code>Authorization: Bearer &lt;API_KEY&gt;</code>. Keys are created in the dashboard,
          have one permission (<code>datasets:read</code> for orders) and must stay on your server: never put them in
          browser or mobile code.
        </p>
        <CodeBlock>{`export DATASET_ACCESS_KEY=dak_...   # from the dashboard, shown once\ncurl -H "Authorization: Bearer $DATASET_ACCESS_KEY" ${origin}/api/v1/orders`}</CodeBlock>
      </section>

      <section className="space-y-6">
        <h2 className="text-xl font-semibold">Endpoints</h2>
        {paths.map(([path, operations]) =>
          Object.entries(operations).map(([method, operation]) => (
            <div key={`${method} ${path}`} className="space-y-2 rounded-lg border border-slate-200 bg-white p-5">
              <h3 className="font-mono text-base font-semibold">
                {method.toUpperCase()} /api/v1{path}
              </h3>
              <p className="text-slate-700">{operation.summary}</p>
              {operation.description && <p className="text-sm text-slate-600">{operation.description}</p>}
              {operation.parameters && operation.parameters.length > 0 && (
                <ul className="list-inside list-disc text-sm text-slate-700">
                  {operation.parameters.map((parameter) => (
                    <li key={parameter.name}>
                      <code>{parameter.name}</code> ({parameter.in})
                      {parameter.description ? `: ${parameter.description}` : ""}
                    </li>
                  ))}
                </ul>
              )}
            </div>
          )),
        )}
      </section>

      <section className="space-y-3">
        <h2 className="text-xl font-semibold">Examples</h2>
        <p className="text-slate-700">
          List orders page by page, read one, and download a file (follow the redirect with -L):
        </p>
        <CodeBlock>
          {[
            `curl -H "Authorization: Bearer $DATASET_ACCESS_KEY" "${origin}/api/v1/orders?limit=50&offset=0"`,
            `curl -H "Authorization: Bearer $DATASET_ACCESS_KEY" ${origin}/api/v1/orders/ord_...`,
            `curl -L -OJ -H "Authorization: Bearer $DATASET_ACCESS_KEY" ${origin}/api/v1/orders/ord_.../files/fil_...`,
            `# resume an interrupted download: ask for a fresh link, then continue where the file stops`,
            `curl -L -C - -o products.csv -H "Authorization: Bearer $DATASET_ACCESS_KEY" ${origin}/api/v1/orders/ord_.../files/fil_...`,
          ].join("\n")}
        </CodeBlock>
        <p className="text-sm text-slate-600">
          curl sends the Authorization header only to the original host, so the signed link it follows needs none. Check
          a download against the file&apos;s <code>sha256</code> (also its ETag).
        </p>
      </section>

      <section className="space-y-3">
        <h2 className="text-xl font-semibold">Social API</h2>
        <p className="text-slate-700">
          For accounts with Social API access: a separate <code>scrape:read</code> key reads stored profiles on{" "}
          {SOCIAL_PLATFORMS.map((platform, index) => (
            <span key={platform}>
              {index > 0 && ", "}
              <code>{platform}</code>
            </span>
          ))}
          . The handle may start with <code>@</code> and case does not matter. Each profile returned uses one read of
          the account&apos;s monthly allowance (calendar month, UTC); the <code>Social-Allowance-Limit</code>,{" "}
          <code>Social-Allowance-Remaining</code> and <code>Social-Allowance-Reset</code> headers say where it stands.
          Every request counts toward the account&apos;s own rate per minute.
        </p>
        <CodeBlock>{`curl -H "Authorization: Bearer $SOCIAL_KEY" "${origin}/api/v1/scrape/instagram/profile?handle=@nasa"`}</CodeBlock>
      </section>

      <section className="space-y-3">
        <h2 className="text-xl font-semibold">Rate limit</h2>
        <p className="text-slate-700">
          {DATASETS_RATE_LIMIT.limit} requests per {DATASETS_RATE_LIMIT.windowSeconds} seconds per account, shared by
          all its dataset keys (sliding window); social keys have the rate set for the account. Responses carry{" "}
          <code>RateLimit-Policy</code> and <code>RateLimit</code>; a 429 also carries <code>Retry-After</code> in
          seconds. Following a signed download link does not count.
        </p>
      </section>

      <section className="space-y-3">
        <h2 className="text-xl font-semibold">Errors</h2>
        <p className="text-slate-700">
          Errors are <code>application/problem+json</code> (RFC 9457):{" "}
          <code>{"{type, title, status, detail, code, request_id}"}</code>. Branch on <code>code</code>; show{" "}
          <code>detail</code> to people; quote <code>request_id</code> to support.
        </p>
        <div className="overflow-x-auto">
          <table className="w-full text-left text-sm">
            <thead>
              <tr className="border-b border-slate-300">
                <th className="py-2 pr-4">Status</th>
                <th className="py-2 pr-4">Code</th>
                <th className="py-2">Meaning</th>
              </tr>
            </thead>
            <tbody>
              {apiErrorCatalog().map(({ code, status, meaning }) => (
                <tr key={code} id={`error-${code}`} className="border-b border-slate-200 align-top">
                  <td className="py-2 pr-4">{status}</td>
                  <td className="py-2 pr-4 font-mono">{code}</td>
                  <td className="py-2">{meaning}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </section>
    </article>
  );
}
