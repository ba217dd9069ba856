"use client";

import { useRouter } from "next/navigation";
import { useState, useTransition } from "react";

/** What a dashboard server action answers: its result, or an error for the person who clicked. */
export type ActionResult<Value> = ({ ok: true } & Value) | { ok: false; error: string };

/**
 * Runs a server action in a transition. On success it hands the result on and refreshes the
 * server-rendered page; on failure it keeps the message to show, so nothing fails silently.
 */
export function useAction() {
  const router = useRouter();
  const [pending, startTransition] = useTransition();
  const [error, setError] = useState<string>();
  function run<Value>(action: () => Promise<ActionResult<Value>>, onDone: (result: Value) => void) {
    setError(undefined);
    startTransition(async () => {
      const result = await action().catch((): ActionResult<Value> => ({
        ok: false,
        error: "The server could not do that. Try again.",
      }));
      if (!result.ok) return setError(result.error);
      onDone(result);
      router.refresh();
    });
  }
  return { pending, error, run, clearError: () => setError(undefined) };
}
