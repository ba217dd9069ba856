"use client";

import { useState, type FormEvent } from "react";
import { ConfirmDialog, Dialog, DialogFormButtons } from "@/components/dialog";
import { ShownOnceDialog } from "@/components/shown-once-dialog";
import { useAction } from "@/components/use-action";
import { Button, Notice, inputClass } from "@/components/ui";
import {
  createEndpointAction,
  deleteEndpointAction,
  resendMessageAction,
  rotateSecretAction,
  sendTestEventAction,
  setEndpointEnabledAction,
} from "./actions";

type EventChoice = { type: string; description: string };

/** The one place an endpoint's signing secret is shown: right after it was made or rotated. */
function SecretDialog({ shown, onClose }: { shown?: { url: string; secret: string }; onClose: () => void }) {
  return (
    <ShownOnceDialog
      value={shown?.secret}
      title="Copy the signing secret"
      warning={
        <>
          <strong>This is the only time the secret is shown.</strong> Your receiver at <code>{shown?.url}</code> needs
          it to verify each message&apos;s <code>webhook-signature</code>.
        </>
      }
      valueTestId="new-webhook-secret"
      copyLabel="Copy signing secret"
      onClose={onClose}
      finalFocus={() => document.getElementById("webhooks-heading")}
    />
  );
}

export function AddEndpoint({ events, localReceivers }: { events: EventChoice[]; localReceivers: boolean }) {
  const [open, setOpen] = useState(false);
  const [shown, setShown] = useState<{ url: string; secret: string }>();
  const { pending, error, run, clearError } = useAction();

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    run(
      () =>
        createEndpointAction({
          url: String(form.get("url") ?? ""),
          events: form.getAll("events").map(String),
        }),
      ({ url, secret }) => {
        setOpen(false);
        setShown({ url, secret });
      },
    );
  }

  return (
    <>
      <Button onClick={() => (clearError(), setOpen(true))}>Add endpoint</Button>
      <Dialog open={open} title="Add a webhook endpoint" onClose={() => setOpen(false)}>
        <form onSubmit={submit} noValidate className="space-y-4">
          {error && <Notice tone="error">{error}</Notice>}
          <div className="space-y-1">
            <label htmlFor="endpoint-url" className="block text-sm font-medium">
              URL
            </label>
            <input
              id="endpoint-url"
              name="url"
              type="url"
              inputMode="url"
              className={inputClass}
              placeholder="https://example.com/webhooks/dataset-access"
            />
            <p className="text-xs text-slate-600">
              {localReceivers
                ? "HTTPS, or http:// on this machine (development). We POST JSON to it."
                : "HTTPS, reachable from the internet. We POST JSON to it."}
            </p>
          </div>
          <fieldset className="space-y-2">
            <legend className="text-sm font-medium">Events</legend>
            {events.map(({ type, description }) => (
              <label key={type} className="flex items-start gap-2 text-sm">
                <input
                  type="checkbox"
                  name="events"
                  value={type}
                  defaultChecked={type.startsWith("order.")}
                  className="mt-1"
                />
                <span>
                  <code>{type}</code>: {description}
                </span>
              </label>
            ))}
          </fieldset>
          <DialogFormButtons
            submitLabel="Add endpoint"
            pendingLabel="Adding…"
            pending={pending}
            onCancel={() => setOpen(false)}
          />
        </form>
      </Dialog>
      <SecretDialog shown={shown} onClose={() => setShown(undefined)} />
    </>
  );
}

export function EndpointActions({ endpointId, url, enabled }: { endpointId: string; url: string; enabled: boolean }) {
  const { pending, error, run } = useAction();
  const [shown, setShown] = useState<{ url: string; secret: string }>();
  const [confirming, setConfirming] = useState<"delete" | "rotate">();
  const [sent, setSent] = useState(false);
  return (
    <div className="space-y-2">
      {error && confirming === undefined && <Notice tone="error">{error}</Notice>}
      {sent && (
        <Notice tone="success">
          <span data-testid="test-event-sent">Test event sent: it appears below within seconds.</span>
        </Notice>
      )}
      <div className="flex flex-wrap gap-2">
        <Button
          size="sm"
          disabled={pending || !enabled}
          onClick={() =>
            run(
              () => sendTestEventAction({ endpointId }),
              () => setSent(true),
            )
          }
        >
          Send test event<span className="sr-only"> to {url}</span>
        </Button>
        <Button
          tone="secondary"
          size="sm"
          disabled={pending}
          onClick={() =>
            run(
              () => setEndpointEnabledAction({ endpointId, enabled: !enabled }),
              () => setSent(false),
            )
          }
        >
          {enabled ? "Disable" : "Enable"}
          <span className="sr-only"> {url}</span>
        </Button>
        <Button tone="secondary" size="sm" disabled={pending} onClick={() => setConfirming("rotate")}>
          Rotate secret<span className="sr-only"> of {url}</span>
        </Button>
        <Button tone="danger" size="sm" disabled={pending} onClick={() => setConfirming("delete")}>
          Delete<span className="sr-only"> {url}</span>
        </Button>
      </div>
      <ConfirmDialog
        open={confirming !== undefined}
        title={confirming === "delete" ? "Delete this endpoint?" : "Rotate the signing secret?"}
        confirmLabel={confirming === "delete" ? "Delete endpoint" : "Rotate secret"}
        pending={pending}
        error={error}
        onConfirm={() =>
          confirming === "delete"
            ? run(
                () => deleteEndpointAction({ endpointId }),
                () => setConfirming(undefined),
              )
            : run(
                () => rotateSecretAction({ endpointId }),
                (rotated) => {
                  setConfirming(undefined);
                  setShown(rotated);
                },
              )
        }
        onClose={() => setConfirming(undefined)}
        finalFocus={() => document.getElementById("webhooks-heading")}
      >
        {confirming === "delete"
          ? `Events stop going to ${url} at once, and its message log is deleted.`
          : "Messages from now on are signed with a new secret: update your receiver right after, or its checks fail."}
      </ConfirmDialog>
      <SecretDialog shown={shown} onClose={() => setShown(undefined)} />
    </div>
  );
}

export function ResendButton({ messageId }: { messageId: string }) {
  const { pending, error, run } = useAction();
  return (
    <span className="inline-flex items-center gap-2">
      <Button
        tone="secondary"
        size="sm"
        disabled={pending}
        onClick={() =>
          run(
            () => resendMessageAction({ messageId }),
            () => {},
          )
        }
      >
        Resend<span className="sr-only"> message {messageId}</span>
      </Button>
      {error && (
        <span role="alert" className="text-xs text-red-800">
          {error}
        </span>
      )}
    </span>
  );
}
