"use client";

import { useState, type FormEvent } from "react";
import { ConfirmDialog } from "@/components/dialog";
import { ShownOnceDialog } from "@/components/shown-once-dialog";
import { useAction } from "@/components/use-action";
import { TextField } from "@/components/text-field";
import { Badge, Button, Notice, inputClass } from "@/components/ui";
import { NAME_MAX_LENGTH } from "@/lib/contract";
import { createShareLinkAction, revokeShareLinkAction } from "./share-actions";

type LinkRow = {
  id: string;
  display: string;
  label: string | null;
  status: "active" | "expired" | "revoked";
  createdAt: string;
  expiresAt: string;
  /** "opened 3 times, last 2 hours ago" */
  opened: string;
  lastOpenedAt?: string;
  downloads: string;
};
const TONE = { active: "green", expired: "red", revoked: "slate" } as const;

export function ShareLinks({
  orderId,
  links,
  expiryChoices,
  notShareable,
}: {
  orderId: string;
  links: LinkRow[];
  expiryChoices: number[];
  /** Why no link can be made for this order (it is not delivered), if so. */
  notShareable?: string;
}) {
  const { pending, error, run } = useAction();
  const [createdUrl, setCreatedUrl] = useState<string>();
  const [revoking, setRevoking] = useState<LinkRow>();

  function create(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const expiry = String(form.get("expiry") ?? "");
    const label = String(form.get("label") ?? "");
    run(
      () => createShareLinkAction({ orderId, expiry, label }),
      ({ url }) => setCreatedUrl(url),
    );
  }

  return (
    <section className="space-y-3" aria-labelledby="share-heading">
      <h2 id="share-heading" tabIndex={-1} className="text-lg font-semibold focus:outline-none">
        Share links
      </h2>
      <p className="text-sm text-slate-600">
        A share link opens this order, and nothing else, to anyone who has it: they can see it and download its
        delivered files without signing in. Revoke it when it is no longer needed.
      </p>
      {error && revoking === undefined && <Notice tone="error">{error}</Notice>}
      {notShareable ? (
        <p className="text-sm text-slate-700" data-testid="not-shareable">
          {notShareable}
        </p>
      ) : (
        <form onSubmit={create} className="flex flex-wrap items-start gap-3">
          <div className="w-full max-w-xs">
            <TextField
              id="share-label"
              name="label"
              label="For whom (optional)"
              maxLength={NAME_MAX_LENGTH}
              placeholder="e.g. for Acme finance"
            />
          </div>
          <div className="space-y-1">
            <label htmlFor="share-expiry" className="block text-sm font-medium">
              Link expires
            </label>
            <select id="share-expiry" name="expiry" defaultValue="7" className={inputClass}>
              {expiryChoices.map((days) => (
                <option key={days} value={days}>
                  after {days} day{days === 1 ? "" : "s"}
                </option>
              ))}
              <option value="never">never (until revoked)</option>
            </select>
          </div>
          <Button type="submit" disabled={pending} className="sm:mt-6">
            Create share link
          </Button>
        </form>
      )}
      {links.length > 0 && (
        <ul className="divide-y divide-slate-100 rounded-lg border border-slate-200 bg-white text-sm">
          {links.map((link) => (
            <li key={link.id} className="flex flex-wrap items-center gap-x-3 gap-y-1 p-3" data-testid="share-link-row">
              {link.label && <strong className="break-all">{link.label}</strong>}
              <code className="font-mono text-xs">{link.display}</code>
              <Badge tone={TONE[link.status]}>{link.status[0]!.toUpperCase() + link.status.slice(1)}</Badge>
              <span className="text-slate-600">
                created {link.createdAt} · expires {link.expiresAt}
              </span>
              {link.status === "active" && (
                <Button tone="secondary" size="sm" className="ml-auto" onClick={() => setRevoking(link)}>
                  Revoke<span className="sr-only"> share link {link.display}</span>
                </Button>
              )}
              <span className="basis-full text-slate-600" data-testid="share-link-activity">
                <span title={link.lastOpenedAt}>{link.opened}</span> · {link.downloads}
              </span>
            </li>
          ))}
        </ul>
      )}
      <ShownOnceDialog
        value={createdUrl}
        title="Share link created"
        warning="Copy the link now: it is shown only this once. Anyone with it can open this order and download its files."
        valueTestId="new-share-url"
        copyLabel="Copy share link"
        closeLabel="Done"
        compact
        onClose={() => setCreatedUrl(undefined)}
        finalFocus={() => document.getElementById("share-heading")}
      />
      <ConfirmDialog
        open={revoking !== undefined}
        title="Revoke this share link?"
        confirmLabel="Revoke link"
        pending={pending}
        error={error}
        onConfirm={() =>
          revoking &&
          run(
            () => revokeShareLinkAction({ orderId, linkId: revoking.id }),
            () => setRevoking(undefined),
          )
        }
        onClose={() => setRevoking(undefined)}
        finalFocus={() => document.getElementById("share-heading")}
      >
        Whoever has <code>{revoking?.display}</code> loses access to this order at once.
      </ConfirmDialog>
    </section>
  );
}
