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
          Dataset Access gives your team a dashboard and a read-only HTTP API for your paid dataset orders: list them,
          check their status and download delivered files from your own backend.
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
      <section className="grid gap-4 sm:grid-cols-3">
        {[
          ["Dashboard", "Sign in with your e-mail, create API keys, see your orders and download files."],
          ["API", "GET /api/v1/orders with a datasets:read key: orders, file metadata and signed downloads."],
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
