"use client";

import { useEffect, useId, useRef, type ReactNode } from "react";
import { Button, Notice } from "./ui";

/**
 * A modal dialog on the native <dialog> element: focus moves into it and is kept there, Escape
 * closes it, and the page behind is inert, all done by the browser.
 */
export function Dialog({
  open,
  title,
  onClose,
  children,
  requireExplicitClose = false,
  finalFocus,
  wide = false,
}: {
  open: boolean;
  title: string;
  onClose: () => void;
  children: ReactNode;
  /** Escape does not close it (a dialog whose content cannot be shown again, like a new secret). */
  requireExplicitClose?: boolean;
  /** Where focus goes once it closes, when the element that opened it is gone or hidden. */
  finalFocus?: () => HTMLElement | null;
  /** As wide as the screen allows, up to 72rem (a table of data), instead of 36rem. */
  wide?: boolean;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) dialog.showModal();
    if (!open && dialog.open) dialog.close();
  }, [open]);
  function closed() {
    onClose();
    const target = finalFocus?.();
    if (target) requestAnimationFrame(() => target.focus());
  }
  return (
    <dialog
      ref={ref}
      aria-labelledby={titleId}
      onClose={closed}
      onCancel={(event) => requireExplicitClose && event.preventDefault()}
      className={`m-auto ${wide ? "w-[min(72rem,calc(100vw-2rem))]" : "w-[min(36rem,calc(100vw-2rem))]"} rounded-lg border border-slate-200 p-0 shadow-xl backdrop:bg-slate-900/50`}
    >
      {open && (
        <div className="space-y-4 p-6">
          <h2 id={titleId} className="text-lg font-semibold break-words">
            {title}
          </h2>
          {children}
        </div>
      )}
    </dialog>
  );
}

/** A dialog that asks before a destructive action: the consequence, Cancel, and the action itself. */
export function ConfirmDialog({
  open,
  title,
  confirmLabel,
  pending,
  error,
  onConfirm,
  onClose,
  finalFocus,
  children,
}: {
  open: boolean;
  title: string;
  confirmLabel: string;
  pending: boolean;
  error?: string;
  onConfirm: () => void;
  onClose: () => void;
  finalFocus?: () => HTMLElement | null;
  children: ReactNode;
}) {
  return (
    <Dialog open={open} title={title} onClose={onClose} finalFocus={finalFocus}>
      {error && <Notice tone="error">{error}</Notice>}
      <p className="text-sm text-slate-700">{children}</p>
      <div className="flex justify-end gap-2">
        <Button tone="secondary" onClick={onClose}>
          Cancel
        </Button>
        <Button tone="danger" disabled={pending} onClick={onConfirm}>
          {confirmLabel}
        </Button>
      </div>
    </Dialog>
  );
}

/** The end of a form in a dialog: Cancel, and its submit button (disabled, and saying so, while pending). */
export function DialogFormButtons({
  submitLabel,
  pendingLabel,
  pending,
  onCancel,
}: {
  submitLabel: string;
  pendingLabel: string;
  pending: boolean;
  onCancel: () => void;
}) {
  return (
    <div className="flex justify-end gap-2">
      <Button tone="secondary" onClick={onCancel}>
        Cancel
      </Button>
      <Button type="submit" disabled={pending}>
        {pending ? pendingLabel : submitLabel}
      </Button>
    </div>
  );
}
