"use client";

import { useRouter } from "next/navigation";
import { useState, useTransition } from "react";
import type { ActionResult } from "@/lib/auth/buyer-action";

/**
 * Runs a server action in a transition. On success it hands the result on and refreshes the
 * server-rendered page; on failure it keeps the message to show, so nothing fails silently.
 */
export function useAction() {
  const router = useRouter();
  const [pending, startTransition] = useTransition();
  const [error, setError] = useState<string>();
  /** The form field the last refusal named, if it named one. */
  const [errorField, setErrorField] = useState<string>();
  function run<Value>(action: () => Promise<ActionResult<Value>>, onDone: (result: Value) => void) {
    setError(undefined);
    setErrorField(undefined);
    startTransition(async () => {
      const result = await action().catch((): ActionResult<Value> => ({
        ok: false,
        error: "The server could not do that. Try again.",
      }));
      if (!result.ok) {
        setErrorField(result.field);
        return setError(result.error);
      }
      onDone(result);
      router.refresh();
    });
  }
  return { pending, error, errorField, run, clearError: () => (setError(undefined), setErrorField(undefined)) };
}
