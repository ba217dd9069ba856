"use client";

import { useId, useState, type ReactNode } from "react";
import { ConfirmDialog } from "@/components/dialog";
import { Button, Notice, inputClass } from "@/components/ui";
import { useAction } from "@/components/use-action";
import type { OrderChoice } from "./destination-controls";
import {
  deleteDestinationAction,
  exportNowAction,
  setDestinationEnabledAction,
  testDestinationAction,
} from "./actions";

/** A destination's buttons: test the connection, export an order now, pause or resume, delete. */
export function DestinationActions({
  destinationId,
  name,
  enabled,
  deliveredOrders,
  children,
}: {
  destinationId: string;
  name: string;
  enabled: boolean;
  deliveredOrders: OrderChoice[];
  /** Beside the buttons: the destination's edit form. */
  children?: ReactNode;
}) {
  const { pending, error, run } = useAction();
  const [tested, setTested] = useState<{ passed: boolean; message: string }>();
  const [started, setStarted] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const orderSelect = useId();
  return (
    <div className="space-y-2">
      {error && !confirming && <Notice tone="error">{error}</Notice>}
      {tested && (
        <Notice tone={tested.passed ? "success" : "error"}>
          <span data-testid="test-result">{tested.message}</span>
        </Notice>
      )}
      {started && (
        <Notice tone="success">
          <span data-testid="export-started">Export started: its run appears below.</span>
        </Notice>
      )}
      <div className="flex flex-wrap items-end gap-2">
        <Button
          size="sm"
          disabled={pending}
          onClick={() =>
            run(
              () => testDestinationAction({ destinationId }),
              ({ passed, message }) => setTested({ passed, message }),
            )
          }
        >
          Test connection<span className="sr-only"> of {name}</span>
        </Button>
        {children}
        <Button
          tone="secondary"
          size="sm"
          disabled={pending}
          onClick={() =>
            run(
              () => setDestinationEnabledAction({ destinationId, enabled: !enabled }),
              () => {},
            )
          }
        >
          {enabled ? "Pause" : "Resume"}
          <span className="sr-only"> {name}</span>
        </Button>
        <Button tone="danger" size="sm" disabled={pending} onClick={() => setConfirming(true)}>
          Delete<span className="sr-only"> {name}</span>
        </Button>
      </div>
      {deliveredOrders.length > 0 && enabled && (
        <form
          className="flex flex-wrap items-end gap-2"
          onSubmit={(event) => {
            event.preventDefault();
            const orderId = String(new FormData(event.currentTarget).get("orderId") ?? "");
            run(
              () => exportNowAction({ destinationId, orderId }),
              () => setStarted(true),
            );
          }}
        >
          <div className="min-w-0 flex-1 space-y-1 sm:max-w-sm">
            <label htmlFor={orderSelect} className="block text-sm font-medium">
              Order to export now
            </label>
            <select id={orderSelect} name="orderId" className={inputClass}>
              {deliveredOrders.map((order) => (
                <option key={order.id} value={order.id}>
                  {order.name}
                </option>
              ))}
            </select>
          </div>
          <Button type="submit" tone="secondary" size="sm" disabled={pending}>
            Export now<span className="sr-only"> to {name}</span>
          </Button>
        </form>
      )}
      <ConfirmDialog
        open={confirming}
        title={`Delete “${name}”?`}
        confirmLabel="Delete destination"
        pending={pending}
        error={error}
        onConfirm={() =>
          run(
            () => deleteDestinationAction({ destinationId }),
            () => setConfirming(false),
          )
        }
        onClose={() => setConfirming(false)}
        finalFocus={() => document.getElementById("exports-heading")}
      >
        Nothing more is exported to it, and its run history is deleted. What it already exported stays in your store.
      </ConfirmDialog>
    </div>
  );
}
