import Markdown from "react-markdown";
import { linkClass } from "./ui";

/**
 * A short Markdown text of our own (an OpenAPI description) as React elements: react-markdown
 * builds elements, never HTML strings, and raw HTML in the text is shown as text.
 */
export function MarkdownText({ children, className = "" }: { children: string; className?: string }) {
  return (
    <div className={`space-y-2 ${className}`}>
      <Markdown
        components={{
          code: ({ children: code }) => <code className="rounded bg-slate-100 px-1 py-0.5 text-[0.9em]">{code}</code>,
          a: ({ href, children: text }) => (
            <a href={href} className={linkClass}>
              {text}
            </a>
          ),
        }}
      >
        {children}
      </Markdown>
    </div>
  );
}
