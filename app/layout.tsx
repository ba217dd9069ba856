import type { Metadata } from "next";
import Link from "next/link";
import type { ReactNode } from "react";
import "./globals.css";

export const metadata: Metadata = {
  title: { default: "Dataset Access", template: "%s · Dataset Access" },
  description: "Your purchased datasets: a dashboard and a read-only API to list orders and download delivered files.",
};

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body className="min-h-screen">
        <header className="border-b border-slate-200 bg-white">
          <div className="mx-auto flex max-w-5xl items-center justify-between px-4 py-3">
            <Link href="/" className="font-semibold tracking-tight text-slate-900">
              Dataset Access
            </Link>
            <nav aria-label="Main" className="flex gap-4 text-sm">
              <Link href="/docs/api" className="text-slate-700 hover:text-slate-900">
                API reference
              </Link>
            </nav>
          </div>
        </header>
        <main className="mx-auto max-w-5xl px-4 py-10">{children}</main>
      </body>
    </html>
  );
}
