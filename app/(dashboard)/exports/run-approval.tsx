"use client";

import { Button, Notice } from "@/components/ui";
import { useAction } from "@/components/use-action";
import { decideRunAction } from "./actions";

/** Approve or Skip of a run awaiting approval: approving lets it run, skipping ends it (the page then shows its new state). */
export function RunApproval({ runId, what }: { runId: string; what: string }) {
  const { pending, error, run } = useAction();
  const decide = (decision: "approve" | "skip") =>
    run(
      () => decideRunAction({ runId, decision }),
      () => {},
    );
  return (
    <div className="space-y-2">
      {error && <Notice tone="error">{error}</Notice>}
      <div className="flex flex-wrap gap-2">
        <Button size="sm" disabled={pending} onClick={() => decide("approve")}>
          Approve<span className="sr-only"> the export of {what}</span>
        </Button>
        <Button tone="secondary" size="sm" disabled={pending} onClick={() => decide("skip")}>
          Skip<span className="sr-only"> the export of {what}</span>
        </Button>
      </div>
    </div>
  );
}
