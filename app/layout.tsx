import type { Metadata, Viewport } from "next";
import Link from "next/link";
import type { ReactNode } from "react";
import { MainNav } from "@/components/main-nav";
import { currentBuyer } from "@/lib/auth/session";
import "./globals.css";

export const metadata: Metadata = {
  title: { default: "Dataset Access", template: "%s · Dataset Access" },
  description: "Your purchased datasets: a dashboard and a read-only API to list orders and download delivered files.",
};
export const viewport: Viewport = { width: "device-width", initialScale: 1 };

/**
 * Every page is rendered per request (the session is read here): the Content-Security-Policy
 * nonce that proxy.ts sets needs it.
 */
export default async function RootLayout({ children }: { children: ReactNode }) {
  // The header must render even when the session store is down; pages that need a buyer check again.
  const buyer = await currentBuyer().catch(() => undefined);
  return (
    <html lang="en">
      <body className="min-h-screen">
        <a
          href="#main"
          className="sr-only focus:not-sr-only focus:absolute focus:top-2 focus:left-2 focus:bg-white focus:p-2"
        >
          Skip to content
        </a>
        <header className="border-b border-slate-200 bg-white">
          <div className="mx-auto flex max-w-6xl flex-wrap items-center justify-between gap-x-3 gap-y-2 px-4 py-3">
            <Link href="/" className="font-semibold tracking-tight text-slate-900">
              Dataset Access
            </Link>
            <MainNav buyerEmail={buyer?.email} />
          </div>
        </header>
        <main id="main" className="mx-auto max-w-6xl px-4 py-8 sm:py-10">
          {children}
        </main>
      </body>
    </html>
  );
}
