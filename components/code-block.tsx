import { CopyButton } from "./copy-button";

/** A block of code or shell commands, with a copy button. */
export function CodeBlock({ children, label }: { children: string; label?: string }) {
  return (
    <div className="relative">
      <pre className="overflow-x-auto rounded-md bg-slate-900 p-4 pr-20 text-sm text-slate-100">
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
