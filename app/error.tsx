"use client";

import { Button } from "@/components/ui";

/** A page that failed to render: a plain message (no internals) and a way to try again. */
export default function ErrorPage({ error, reset }: { error: Error & { digest?: string }; reset: () => void }) {
  return (
    <div className="mx-auto max-w-md space-y-4" role="alert">
      <h1 className="text-2xl font-bold tracking-tight">Something went wrong</h1>
      <p className="text-slate-700">
        This page could not be shown. Try again in a moment; if it keeps happening, quote this reference to support:{" "}
        <code>{error.digest ?? "none"}</code>.
      </p>
      <Button onClick={reset}>Try again</Button>
    </div>
  );
}
