"use client";

import type { ReactNode } from "react";
import { CopyButton } from "./copy-button";
import { Dialog } from "./dialog";
import { Button, Notice } from "./ui";

/**
 * The one moment a secret (an API key, a webhook signing secret, a share link) is shown: a warning,
 * the value with a copy button, and a button that closes it. Escape does not close it: what it
 * shows cannot be shown again.
 */
export function ShownOnceDialog({
  value,
  title,
  warning,
  details,
  afterValue,
  valueTestId,
  copyLabel,
  closeLabel = "I have stored it",
  compact = false,
  onClose,
  finalFocus,
}: {
  /** The secret; the dialog is open while it is set. */
  value?: string;
  title: string;
  warning: ReactNode;
  /** What the secret belongs to, shown above it. */
  details?: ReactNode;
  /** A second use of the secret, shown below it: the copy button stays the first thing focused. */
  afterValue?: ReactNode;
  valueTestId: string;
  copyLabel: string;
  closeLabel?: string;
  /** Smaller type, for a long value such as a URL. */
  compact?: boolean;
  onClose: () => void;
  finalFocus: () => HTMLElement | null;
}) {
  return (
    <Dialog open={value !== undefined} title={title} onClose={onClose} requireExplicitClose finalFocus={finalFocus}>
      <Notice tone="warning">{warning}</Notice>
      {details}
      <div className="flex items-center gap-2 rounded-md border border-slate-300 bg-slate-50 p-2">
        <code
          data-testid={valueTestId}
          className={`flex-1 font-mono ${compact ? "text-xs" : "text-sm"} break-all select-all`}
        >
          {value}
        </code>
        <CopyButton value={value ?? ""} label={copyLabel} />
      </div>
      {afterValue}
      <div className="flex justify-end">
        <Button onClick={onClose}>{closeLabel}</Button>
      </div>
    </Dialog>
  );
}
