"use client";

import Link from "next/link";
import { usePathname } from "next/navigation";
import { useState, type MouseEvent } from "react";
import { NavLink } from "./nav-link";
import { SignOutButton } from "./sign-out-button";
import { buttonClass } from "./ui";

const BUYER_LINKS = [
  { href: "/orders", label: "Orders" },
  { href: "/keys", label: "API keys" },
  { href: "/webhooks", label: "Webhooks" },
  { href: "/exports", label: "Exports" },
  { href: "/security", label: "Security log" },
];
const PUBLIC_LINKS = [
  { href: "/getting-started", label: "Getting started" },
  { href: "/docs/api", label: "API reference" },
];

/**
 * The header's navigation: inline from the `lg` breakpoint up; on a phone one "Menu" button that
 * opens the same links as a list, so the header stays one row. A share page's visitor may have no
 * account, so it does not offer them "Sign in"; nor does the sign-in confirm page, whose own Sign in
 * button is the one to press (the header's looked the same and led back to the form).
 */
export function MainNav({ buyerEmail }: { buyerEmail?: string }) {
  const pathname = usePathname() ?? "";
  const [open, setOpen] = useState(false);
  const links = buyerEmail ? [...BUYER_LINKS, ...PUBLIC_LINKS] : PUBLIC_LINKS;
  const account = buyerEmail ? (
    <>
      <span className="hidden text-slate-500 xl:inline" data-testid="signed-in-as">
        {buyerEmail}
      </span>
      <SignOutButton />
    </>
  ) : pathname.startsWith("/share/") || pathname.startsWith("/signin/confirm") ? null : (
    <Link href="/signin" className={buttonClass("primary", "sm")}>
      Sign in
    </Link>
  );
  // Following a link from the phone menu closes it.
  const closeOnLink = (event: MouseEvent) => {
    if ((event.target as HTMLElement).closest("a")) setOpen(false);
  };

  return (
    <>
      <nav aria-label="Main" className="hidden items-center gap-x-4 text-sm lg:flex">
        {links.map(({ href, label }) => (
          <NavLink key={href} href={href}>
            {label}
          </NavLink>
        ))}
        {account}
      </nav>
      <button
        type="button"
        className={`${buttonClass("secondary", "sm")} lg:hidden`}
        aria-expanded={open}
        aria-controls="phone-nav"
        onClick={() => setOpen(!open)}
      >
        Menu
      </button>
      {open && (
        <nav
          id="phone-nav"
          aria-label="Main"
          onClick={closeOnLink}
          className="flex basis-full flex-col items-start gap-3 border-t border-slate-200 pt-3 text-base lg:hidden"
        >
          {links.map(({ href, label }) => (
            <NavLink key={href} href={href}>
              {label}
            </NavLink>
          ))}
          {buyerEmail && (
            <span className="text-sm break-all text-slate-500" data-testid="signed-in-as-phone">
              Signed in as {buyerEmail}
            </span>
          )}
          {account}
        </nav>
      )}
    </>
  );
}
