"use client";

import { useRef, useState, type FormEvent } from "react";
import { ConfirmDialog, Dialog, DialogFormButtons } from "@/components/dialog";
import { ShownOnceDialog } from "@/components/shown-once-dialog";
import { useAction } from "@/components/use-action";
import { TextField } from "@/components/text-field";
import { Button, Notice } from "@/components/ui";
import { NAME_MAX_LENGTH } from "@/lib/contract";
import { formatDate } from "@/lib/format";
import { PERMISSION_SUMMARIES } from "@/lib/keys/permissions";
import { SHARING_PROFILE_FILE_NAME, sharingProfile } from "@/lib/sharing/profile";
import { createKeyAction, replaceKeyAction, revokeKeyAction, type CreatedKey } from "./actions";

function ExpiryChoice({ choices, defaultValue }: { choices: number[]; defaultValue: number }) {
  return (
    <fieldset className="space-y-1">
      <legend className="text-sm font-medium">Expires in</legend>
      <div className="flex flex-wrap gap-4">
        {choices.map((days) => (
          <label key={days} className="flex items-center gap-2 text-sm">
            <input type="radio" name="expiresInDays" value={days} defaultChecked={days === defaultValue} />
            {days} days
          </label>
        ))}
      </div>
    </fieldset>
  );
}

const OVERLAP_CHOICES = [
  { value: "none", label: "now (for a leaked key)" },
  { value: "1h", label: "in 1 hour" },
  { value: "24h", label: "in 24 hours" },
  { value: "7d", label: "in 7 days" },
];

export function CreateKeyButton({ socialEnabled, expiryChoices }: { socialEnabled: boolean; expiryChoices: number[] }) {
  const trigger = useRef<HTMLButtonElement>(null);
  const [open, setOpen] = useState(false);
  const [secretKey, setSecretKey] = useState<CreatedKey>();
  const { pending, error, run, clearError } = useAction();
  const nameInput = useRef<HTMLInputElement>(null);
  const [nameError, setNameError] = useState<string>();

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    if (!String(form.get("name") ?? "").trim()) {
      setNameError("Give the key a name, e.g. where it is used.");
      nameInput.current?.focus();
      return;
    }
    const input = {
      name: String(form.get("name") ?? ""),
      expiresInDays: String(form.get("expiresInDays") ?? ""),
      permission: String(form.get("permission") ?? ""),
    };
    run(
      () => createKeyAction(input),
      ({ key }) => {
        setOpen(false);
        setSecretKey(key);
      },
    );
  }

  return (
    <>
      <Button ref={trigger} onClick={() => (clearError(), setNameError(undefined), setOpen(true))}>
        Create key
      </Button>
      <Dialog open={open} title="Create an API key" onClose={() => setOpen(false)}>
        <form onSubmit={submit} noValidate className="space-y-4">
          {error && <Notice tone="error">{error}</Notice>}
          <TextField
            id="key-name"
            name="name"
            label="Name"
            maxLength={NAME_MAX_LENGTH}
            placeholder="e.g. warehouse-sync"
            hint="Say where it is used, so you know what breaks if you revoke it."
            error={nameError}
            inputRef={nameInput}
            onInput={() => setNameError(undefined)}
          />
          <ExpiryChoice choices={expiryChoices} defaultValue={90} />
          <fieldset className="space-y-1">
            <legend className="text-sm font-medium">Permission</legend>
            <label className="flex items-center gap-2 text-sm">
              <input type="radio" name="permission" value="datasets:read" defaultChecked />
              <span>
                <code>datasets:read</code>: {PERMISSION_SUMMARIES["datasets:read"]}
              </span>
            </label>
            <label className={`flex items-center gap-2 text-sm ${socialEnabled ? "" : "text-slate-400"}`}>
              <input
                type="radio"
                name="permission"
                value="scrape:read"
                disabled={!socialEnabled}
                aria-describedby="scrape-help"
              />
              <span>
                <code>scrape:read</code>: {PERMISSION_SUMMARIES["scrape:read"]}
              </span>
            </label>
            {!socialEnabled && (
              <p id="scrape-help" className="text-xs text-slate-500">
                Social API access is not enabled for this account.
              </p>
            )}
          </fieldset>
          <DialogFormButtons
            submitLabel="Create key"
            pendingLabel="Creating…"
            pending={pending}
            onCancel={() => setOpen(false)}
          />
        </form>
      </Dialog>
      <SecretDialog created={secretKey} onClose={() => setSecretKey(undefined)} finalFocus={() => trigger.current} />
    </>
  );
}

/** The only place a key's secret is ever shown. It lives in this component's state until the dialog closes. */
function SecretDialog({
  created,
  onClose,
  finalFocus,
}: {
  created?: CreatedKey;
  onClose: () => void;
  finalFocus: () => HTMLElement | null;
}) {
  return (
    <ShownOnceDialog
      value={created?.secret}
      title="Copy your new API key"
      warning={
        <>
          <strong>This is the only time the key is shown.</strong> Copy it into your server&apos;s secret store now. If
          you lose it, create a replacement and revoke this one.
        </>
      }
      details={
        created && (
          <p className="text-sm text-slate-700">
            <strong>{created.name}</strong> · <code>{created.permission}</code> · expires{" "}
            {formatDate(created.expiresAt)}
          </p>
        )
      }
      afterValue={created?.permission === "datasets:read" && <SharingProfileDownload created={created} />}
      valueTestId="new-key-secret"
      copyLabel="Copy API key"
      onClose={onClose}
      finalFocus={finalFocus}
    />
  );
}

/**
 * The key as a Delta Sharing profile file (pandas, Spark, Power BI), made here in the browser from
 * the secret this dialog already holds: it is never sent anywhere again.
 */
function SharingProfileDownload({ created }: { created: CreatedKey }) {
  function download() {
    const profile = sharingProfile(created.origin, created.secret, created.expiresAt);
    const url = URL.createObjectURL(new Blob([`${JSON.stringify(profile, null, 2)}\n`], { type: "application/json" }));
    const link = document.createElement("a");
    link.href = url;
    link.download = SHARING_PROFILE_FILE_NAME;
    link.click();
    URL.revokeObjectURL(url);
  }
  return (
    <div className="flex flex-wrap items-center gap-2 text-sm text-slate-700">
      <Button tone="secondary" size="sm" onClick={download}>
        Download sharing profile
      </Button>
      <span>
        for pandas, Spark and Power BI (<a href="/getting-started#delta-sharing">how</a>). It holds the key: store it
        like the key.
      </span>
    </div>
  );
}

export function RevokeKeyButton({ keyId, name }: { keyId: string; name: string }) {
  const [open, setOpen] = useState(false);
  const { pending, error, run } = useAction();
  return (
    <>
      <Button tone="secondary" size="sm" onClick={() => setOpen(true)} aria-label={`Revoke ${name}`}>
        Revoke
      </Button>
      <ConfirmDialog
        open={open}
        title={`Revoke “${name}”?`}
        confirmLabel={pending ? "Revoking…" : "Revoke key"}
        pending={pending}
        error={error}
        onConfirm={() =>
          run(
            () => revokeKeyAction(keyId),
            () => setOpen(false),
          )
        }
        onClose={() => setOpen(false)}
        finalFocus={() => document.getElementById("keys-heading")}
      >
        Requests with this key fail from the next one on. This cannot be undone: to restore access, create a new key.
      </ConfirmDialog>
    </>
  );
}

export function ReplaceKeyButton({
  keyId,
  name,
  expiryChoices,
  canRevokeOld,
  canReplace,
}: {
  keyId: string;
  name: string;
  expiryChoices: number[];
  canRevokeOld: boolean;
  /** False for a retiring key: no Replace button, but the replacement's secret dialog stays mounted after the refresh. */
  canReplace: boolean;
}) {
  const trigger = useRef<HTMLButtonElement>(null);
  const [open, setOpen] = useState(false);
  const [secretKey, setSecretKey] = useState<CreatedKey>();
  const { pending, error, run } = useAction();

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const input = {
      keyId,
      expiresInDays: String(form.get("expiresInDays") ?? ""),
      overlap: String(form.get("overlap") ?? "none"),
    };
    run(
      () => replaceKeyAction(input),
      ({ key }) => {
        setOpen(false);
        setSecretKey(key);
      },
    );
  }

  return (
    <>
      {canReplace && (
        <Button ref={trigger} tone="secondary" size="sm" onClick={() => setOpen(true)} aria-label={`Replace ${name}`}>
          Replace
        </Button>
      )}
      <Dialog open={open} title={`Replace “${name}”`} onClose={() => setOpen(false)}>
        <form onSubmit={submit} noValidate className="space-y-4">
          {error && <Notice tone="error">{error}</Notice>}
          <p className="text-sm text-slate-700">
            Creates a new key with the same name and permission. The old key keeps working for the overlap you choose,
            so you can deploy the new one first; then it retires on its own.
          </p>
          <ExpiryChoice choices={expiryChoices} defaultValue={90} />
          {canRevokeOld && (
            <fieldset className="space-y-1">
              <legend className="text-sm font-medium">The old key stops working</legend>
              <div className="flex flex-wrap gap-x-4 gap-y-1">
                {OVERLAP_CHOICES.map(({ value, label }) => (
                  <label key={value} className="flex items-center gap-2 text-sm">
                    <input type="radio" name="overlap" value={value} defaultChecked={value === "24h"} />
                    {label}
                  </label>
                ))}
              </div>
            </fieldset>
          )}
          <DialogFormButtons
            submitLabel="Create replacement"
            pendingLabel="Creating…"
            pending={pending}
            onCancel={() => setOpen(false)}
          />
        </form>
      </Dialog>
      <SecretDialog
        created={secretKey}
        onClose={() => setSecretKey(undefined)}
        finalFocus={() => document.getElementById("keys-heading")}
      />
    </>
  );
}
