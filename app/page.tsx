import Link from "next/link";
import { buttonClass } from "@/components/ui";
import { currentBuyer } from "@/lib/auth/session";
import { databaseIsUp } from "@/lib/http/health";

export const dynamic = "force-dynamic";

export default async function HomePage() {
  const [up, buyer] = await Promise.all([databaseIsUp(), currentBuyer().catch(() => undefined)]);
  return (
    <div className="space-y-10">
      <section className="space-y-4">
        <h1 className="text-3xl font-bold tracking-tight sm:text-4xl">The datasets you bought, one request away.</h1>
        <p className="max-w-2xl text-lg text-slate-600">
          Dataset Access gives your team a dashboard and a read-only HTTP API for your paid dataset orders: download the
          files, or work with the data where it is. Every delivery is a table with numbered versions, each checked by a
          quality report and shipped with a change file of what it added, updated or deleted. Read rows filtered with{" "}
          <code>where</code>, ask SQL questions, take a subset as a file, connect pandas, Spark or Power BI over Delta
          Sharing, or let an AI agent in over MCP.
        </p>
        <div className="flex flex-wrap gap-3">
          <Link href={buyer ? "/orders" : "/signin"} className={buttonClass("primary")}>
            {buyer ? "Your orders" : "Sign in"}
          </Link>
          <Link href="/getting-started" className={buttonClass("secondary")}>
            Getting started with the API
          </Link>
        </div>
      </section>
      <section className="grid gap-4 sm:grid-cols-2 lg:grid-cols-4">
        {[
          [
            "Dashboard",
            "Sign in with your e-mail, create API keys, see your orders, tables, versions and quality, query them in SQL and download files.",
          ],
          [
            "API",
            "One datasets:read key reads orders and files, tables and their versions, quality reports and change files, rows with where, SQL and subsets.",
          ],
          [
            "Your tools",
            "The same key opens Delta Sharing for pandas, Spark and Power BI, and MCP for AI agents; the Python and TypeScript clients sync every file.",
          ],
          ["Share links", "Give a colleague one order, and nothing else, with a link you can revoke."],
        ].map(([title, text]) => (
          <div key={title} className="rounded-lg border border-slate-200 bg-white p-5">
            <h2 className="font-semibold">{title}</h2>
            <p className="mt-2 text-sm text-slate-600">{text}</p>
          </div>
        ))}
      </section>
      <p className="text-sm text-slate-500" data-testid="service-status">
        Service status: {up ? "operational" : "database unavailable"}
      </p>
    </div>
  );
}
