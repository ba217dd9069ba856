import type { Metadata } from "next";
import Link from "next/link";
import type { ReactNode } from "react";
import { CodeBlock } from "@/components/code-block";
import { MarkdownText } from "@/components/markdown";
import { linkClass } from "@/components/ui";
import { apiDocument } from "@/lib/api/routes";
import { apiErrorCatalog } from "@/lib/http/problem";
import { DATASETS_RATE_LIMIT } from "@/lib/contract";
import { DEMO_EMAIL, apiExamples } from "@/lib/docs/examples";
import {
  endpointViews,
  objectViews,
  type EndpointView,
  type OpenApiDocument,
  type TypeLabel,
} from "@/lib/docs/reference";
import { PERMISSION_SUMMARIES } from "@/lib/keys/permissions";
import { siteOrigin } from "@/lib/site";
import { AUTH, curl, exampleFor, type Example } from "./example-calls";
import { DeltaSharingSection, McpSection } from "./sections";
import { SOCIAL_PLATFORMS } from "@/lib/schemas/social-platforms";
import { WEBHOOK_EVENT_DESCRIPTIONS, WEBHOOK_EVENT_TYPES } from "@/lib/webhooks/events";

export const metadata: Metadata = { title: "API reference" };
export const dynamic = "force-dynamic";

/** The reference's sections beside the endpoints, for its table of contents. */
const OTHER_SECTIONS = [
  ["webhooks", "Webhooks: events pushed to your backend"],
  ["delta-sharing", "Delta Sharing: pandas, Spark, Power BI"],
  ["mcp", "MCP: AI agents over your datasets"],
] as const;

/** Rendered from the same OpenAPI document as /api/v1/openapi.json, so the two cannot disagree. */
export default async function ApiReferencePage() {
  const origin = await siteOrigin();
  const api = `${origin}/api/v1`;
  const document = apiDocument(api) as unknown as OpenApiDocument;
  const examples = await apiExamples(document);
  const endpoints = endpointViews(document);
  return (
    <article className="space-y-10">
      <header className="space-y-3">
        <h1 className="text-3xl font-bold tracking-tight">API reference</h1>
        <MarkdownText className="max-w-2xl text-slate-600">{document.info?.description ?? ""}</MarkdownText>
        <p className="text-sm">
          Machine-readable: {/* A JSON document, not a page: a plain link, never client-side navigation. */}
          <a className={linkClass} href="/api/v1/openapi.json">
            /api/v1/openapi.json
          </a>{" "}
          (OpenAPI 3.1).
        </p>
        <nav aria-label="Endpoints" className="text-sm">
          <ul className="list-inside list-disc space-y-1">
            {endpoints.map((endpoint) => (
              <li key={endpoint.id}>
                <a href={`#${endpoint.id}`} className={linkClass}>
                  {endpoint.summary}
                </a>
              </li>
            ))}
            {OTHER_SECTIONS.map(([id, title]) => (
              <li key={id}>
                <a href={`#${id}`} className={linkClass}>
                  {title}
                </a>
              </li>
            ))}
          </ul>
        </nav>
      </header>

      <section className="space-y-3">
        <h2 className="text-xl font-semibold">Authentication</h2>
        <p className="text-slate-700">
          Every request carries <code>Authorization: Bearer &lt;API_KEY&gt;</code>. Keys are created in the{" "}
          <Link href="/keys" className={linkClass}>
            dashboard
          </Link>
          , have one permission and must stay on your server: never put them in browser or mobile code. A{" "}
          <code>datasets:read</code> key reads {PERMISSION_SUMMARIES["datasets:read"]}; a <code>scrape:read</code> key
          reads {PERMISSION_SUMMARIES["scrape:read"]}.
        </p>
        <CodeBlock label="shell">{`export DATASET_ACCESS_KEY=dak_...   # from the dashboard, shown once\n${curl(AUTH, `${api}/orders`)}`}</CodeBlock>
        <p className="text-sm text-slate-600" data-testid="examples-source">
          {examples.source === "demo"
            ? `The examples below are real: their ids and answers are those of the demo account (${DEMO_EMAIL}), so they work as shown with one of its keys.`
            : "The ids and values in the examples below are made up; your own orders' ids come from the list."}
        </p>
      </section>

      <section className="space-y-6" aria-labelledby="endpoints-heading">
        <h2 id="endpoints-heading" className="text-xl font-semibold">
          Endpoints
        </h2>
        {endpoints.map((endpoint) => (
          <Endpoint key={endpoint.id} endpoint={endpoint} example={exampleFor(endpoint.id, examples, api)} />
        ))}
      </section>

      <section className="space-y-4" aria-labelledby="objects-heading">
        <h2 id="objects-heading" className="text-xl font-semibold">
          Objects
        </h2>
        {objectViews(document).map((object) => (
          <div
            key={object.name}
            id={`schema-${object.name}`}
            className="space-y-2 rounded-lg border border-slate-200 bg-white p-4 sm:p-5"
          >
            <h3 className="font-mono text-base font-semibold">{object.name}</h3>
            {object.description && <MarkdownText className="text-sm text-slate-700">{object.description}</MarkdownText>}
            <dl className="divide-y divide-slate-100 text-sm" data-testid={`fields-${object.name}`}>
              {object.fields.map((field) => (
                <div key={field.name} className="gap-4 py-2 sm:grid sm:grid-cols-[12rem_1fr]">
                  <dt className="font-mono break-all">
                    {field.name}
                    {!field.required && <span className="ml-1 font-sans text-xs text-slate-500">optional</span>}
                  </dt>
                  <dd className="space-y-1 text-slate-700">
                    <Type label={field.type} />
                    {field.description && <MarkdownText>{field.description}</MarkdownText>}
                  </dd>
                </div>
              ))}
            </dl>
          </div>
        ))}
      </section>

      <section id="webhooks" className="space-y-3" aria-labelledby="webhooks-heading">
        <h2 id="webhooks-heading" className="text-xl font-semibold">
          Webhooks
        </h2>
        <p className="text-slate-700">
          Add endpoints on the{" "}
          <Link href="/webhooks" className={linkClass}>
            Webhooks
          </Link>{" "}
          page. Each message is a POST of <code>{"{type, timestamp, data}"}</code> as JSON, where <code>data</code> is
          the{" "}
          <a href="#schema-Order" className={linkClass}>
            Order
          </a>{" "}
          (order events) or <code>{"{id, name, permission, expires_at}"}</code> (key events):
        </p>
        <ul className="list-inside list-disc text-sm text-slate-700">
          {WEBHOOK_EVENT_TYPES.map((type) => (
            <li key={type}>
              <code>{type}</code>: {WEBHOOK_EVENT_DESCRIPTIONS[type]}
            </li>
          ))}
        </ul>
        <p className="text-slate-700">
          Messages are signed per Standard Webhooks: <code>webhook-id</code> (the same on every retry: deduplicate on
          it), <code>webhook-timestamp</code> (Unix seconds) and <code>webhook-signature</code> (<code>v1,</code> +
          base64 HMAC-SHA256 of <code>id.timestamp.body</code> with the endpoint&apos;s secret). Verify with any
          Standard Webhooks library before trusting a message, and answer 2xx within 15 seconds. Other answers, timeouts
          and redirects (never followed) are retried after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h; an endpoint
          failing for 3 days is disabled and you are e-mailed.
        </p>
        <CodeBlock label="verify (Node.js)">{`import { Webhook } from "standardwebhooks";

// rawBody: the request body exactly as received (a string), before any JSON parsing
const event = new Webhook(process.env.DATASET_ACCESS_WEBHOOK_SECRET).verify(rawBody, request.headers);
if (event.type === "order.delivered") queueDownload(event.data.id);`}</CodeBlock>
      </section>

      <DeltaSharingSection origin={origin} ids={examples.ids} />

      <McpSection origin={origin} />

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

      <section className="space-y-3" aria-labelledby="errors-heading">
        <h2 id="errors-heading" className="text-xl font-semibold">
          Errors
        </h2>
        <p className="text-slate-700">
          Errors are <code>application/problem+json</code> (RFC 9457), a{" "}
          <a href="#schema-Problem" className={linkClass}>
            Problem
          </a>
          : <code>{"{type, title, status, detail, code, request_id}"}</code>. Branch on <code>code</code>; show{" "}
          <code>detail</code> to people; quote <code>request_id</code> to support.
        </p>
        {/* A list, not a table: each error stacks on a phone and lines up in columns from `sm` up. */}
        <ul className="divide-y divide-slate-200 border-y border-slate-200 text-sm" aria-label="Error codes">
          <li className="hidden gap-4 py-2 font-semibold sm:grid sm:grid-cols-[4rem_14rem_1fr]" aria-hidden="true">
            <span>Status</span>
            <span>Code</span>
            <span>Meaning</span>
          </li>
          {apiErrorCatalog().map(({ code, status, meaning }) => (
            <li
              key={code}
              id={`error-${code}`}
              className="gap-4 py-2 sm:grid sm:grid-cols-[4rem_14rem_1fr]"
              data-testid="error-code"
            >
              <span className="mr-2 font-semibold sm:mr-0">{status}</span>
              <code className="font-mono break-all">{code}</code>
              <MarkdownText className="mt-1 text-slate-700 sm:mt-0">{meaning}</MarkdownText>
            </li>
          ))}
        </ul>
      </section>
    </article>
  );
}

function Endpoint({ endpoint, example }: { endpoint: EndpointView; example?: Example }) {
  return (
    <div
      id={endpoint.id}
      data-example-path={example?.path}
      className="space-y-4 rounded-lg border border-slate-200 bg-white p-4 sm:p-5"
    >
      <div className="space-y-1">
        <h3 className="font-mono text-base font-semibold break-all">
          {endpoint.method} /api/v1{endpoint.path}
        </h3>
        <p className="text-slate-700">{endpoint.summary}</p>
      </div>
      {endpoint.description && <MarkdownText className="text-sm text-slate-700">{endpoint.description}</MarkdownText>}
      {endpoint.parameters.length > 0 && (
        <Part title="Parameters">
          <dl className="divide-y divide-slate-100 text-sm">
            {endpoint.parameters.map((parameter) => (
              <div key={`${parameter.in}-${parameter.name}`} className="gap-4 py-2 sm:grid sm:grid-cols-[12rem_1fr]">
                <dt className="font-mono">
                  {parameter.name}{" "}
                  <span className="font-sans text-xs text-slate-500">
                    {parameter.in}
                    {parameter.required ? ", required" : ", optional"}
                  </span>
                </dt>
                <dd className="text-slate-700">
                  {parameter.description && <MarkdownText>{parameter.description}</MarkdownText>}
                </dd>
              </div>
            ))}
          </dl>
        </Part>
      )}
      <Part title="Responses">
        <ul className="space-y-1 text-sm text-slate-700">
          {[...endpoint.success, ...endpoint.errors].map((response) => (
            <li key={response.status} className="flex flex-wrap gap-x-2">
              <span className="font-semibold">{response.status}</span>
              {response.body && <Type label={response.body} />}
              <MarkdownText className="[&_p]:inline">{response.description}</MarkdownText>
            </li>
          ))}
        </ul>
      </Part>
      {example && (
        <Part title="Example">
          <CodeBlock label="request">{example.request}</CodeBlock>
          {example.response && (
            <CodeBlock label={example.responseLabel} testId={`example-response-${endpoint.id}`}>
              {example.response}
            </CodeBlock>
          )}
        </Part>
      )}
    </div>
  );
}

function Part({ title, children }: { title: string; children: ReactNode }) {
  return (
    <div className="space-y-2">
      <h4 className="text-sm font-semibold text-slate-900">{title}</h4>
      {children}
    </div>
  );
}

/** A type, with a link to the object it names. */
function Type({ label }: { label: TypeLabel }) {
  return label.ref ? (
    <a href={`#schema-${label.ref}`} className={`${linkClass} font-mono text-xs`}>
      {label.text}
    </a>
  ) : (
    <span className="font-mono text-xs text-slate-600">{label.text}</span>
  );
}
