"use client";

import { signIn } from "next-auth/react";
import { useRouter } from "next/navigation";
import { useState, type FormEvent } from "react";
import { Notice, buttonClass, inputClass } from "@/components/ui";
import { signInErrorMessage } from "./messages";

export function SignInForm({
  callbackUrl,
  initialError,
  initialEmail = "",
}: {
  callbackUrl: string;
  initialError?: string;
  initialEmail?: string;
}) {
  const router = useRouter();
  const [error, setError] = useState(initialError);
  const [pending, setPending] = useState(false);

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const email = String(new FormData(event.currentTarget).get("email") ?? "").trim();
    setPending(true);
    setError(undefined);
    try {
      const result = await signIn("email", { email, callbackUrl, redirect: false });
      if (result?.ok && !result.error) {
        router.push(`/signin/check-email?${new URLSearchParams({ email })}`);
        return;
      }
      setError(result?.error ?? "EmailSignin");
    } catch {
      setError("Network");
    }
    setPending(false);
  }

  return (
    <form onSubmit={submit} className="space-y-4" noValidate={false}>
      {error && <Notice tone="error">{signInErrorMessage(error)}</Notice>}
      <div className="space-y-1">
        <label htmlFor="email" className="block text-sm font-medium">
          E-mail address
        </label>
        <input
          id="email"
          name="email"
          type="email"
          required
          autoComplete="email"
          inputMode="email"
          defaultValue={initialEmail}
          // The page exists to take this one field.
          autoFocus
          className={inputClass}
          placeholder="you@company.com"
        />
        <p className="text-xs text-slate-500">Use the address your datasets were bought with.</p>
      </div>
      <button type="submit" disabled={pending} className={`${buttonClass("primary")} w-full`}>
        {pending ? "Sending…" : "E-mail me a sign-in link"}
      </button>
    </form>
  );
}
