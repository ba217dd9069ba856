import { CopyButton } from "./copy-button";

/** A block of code or shell commands, with a copy button; focusable, so a long line scrolls by keyboard. */
export function CodeBlock({ children, label }: { children: string; label?: string }) {
  return (
    <div className="relative">
      <pre
        tabIndex={0}
        aria-label={label ?? "Code"}
        className="overflow-x-auto rounded-md bg-slate-900 p-4 pr-20 text-sm text-slate-100 focus-visible:outline-2 focus-visible:outline-blue-400"
      >
        <code>{children}</code>
      </pre>
      <CopyButton
        value={children}
        label={label ? `Copy ${label}` : "Copy"}
        className="absolute top-2 right-2 border-slate-600 bg-slate-800 text-slate-100 hover:bg-slate-700"
      />
    </div>
  );
}
