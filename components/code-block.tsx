import { CopyButton } from "./copy-button";

/**
 * A block of code or shell commands under a bar with its label and a copy button (never over the
 * code, so nothing is hidden on a phone). On a phone long lines wrap, so nothing is cut off; from
 * `sm` up they scroll, and the block is focusable, so that works by keyboard.
 */
export function CodeBlock({ children, label, testId }: { children: string; label?: string; testId?: string }) {
  return (
    <div className="overflow-hidden rounded-md bg-slate-900">
      <div className="flex items-center justify-between gap-2 border-b border-slate-700 px-3 py-1.5">
        <span className="truncate text-xs text-slate-300">{label ?? ""}</span>
        <CopyButton
          value={children}
          label={label ? `Copy ${label}` : "Copy"}
          className="shrink-0 border-slate-600 bg-slate-800 text-slate-100 hover:bg-slate-700"
        />
      </div>
      <pre
        tabIndex={0}
        aria-label={label ?? "Code"}
        data-testid={testId}
        className="overflow-x-auto p-4 text-sm whitespace-pre-wrap text-slate-100 [overflow-wrap:anywhere] sm:whitespace-pre sm:[overflow-wrap:normal] focus-visible:outline-2 focus-visible:-outline-offset-2 focus-visible:outline-blue-400"
      >
        <code>{children}</code>
      </pre>
    </div>
  );
}
