"use client";

import { signOut } from "next-auth/react";
import { buttonClass } from "./ui";

export function SignOutButton() {
  return (
    <button
      type="button"
      className={buttonClass("secondary", "sm")}
      onClick={() => signOut({ callbackUrl: "/signin?signedOut" })}
    >
      Sign out
    </button>
  );
}
