"use client";

import Link from "next/link";
import { usePathname } from "next/navigation";
import type { ReactNode } from "react";

const base = "rounded px-1 hover:text-slate-900 focus-visible:outline-2 focus-visible:outline-blue-600";

/** A main-navigation link that marks the current section (aria-current, and visibly). */
export function NavLink({ href, children }: { href: string; children: ReactNode }) {
  const pathname = usePathname() ?? "";
  const current = pathname === href || pathname.startsWith(`${href}/`);
  return (
    <Link
      href={href}
      aria-current={current ? "page" : undefined}
      className={`${base} ${current ? "font-semibold text-slate-900 underline underline-offset-4" : "text-slate-700"}`}
    >
      {children}
    </Link>
  );
}
