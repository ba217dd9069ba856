"use client";

import { useEffect, useRef, useState, type MouseEvent, type ReactNode } from "react";
import type { HandedOut } from "@/lib/http/browser-download";

/** Seconds to wait when a 202 names none (the API always does). */
const DEFAULT_RETRY_SECONDS = 5;

/**
 * A download link of a file in another format, which may still be being made (CSV and JSON Lines
 * are made on first request). Clicked, it asks the download route from the page (Accept:
 * application/json) and follows the API's rule: 202 with Retry-After, ask again after that many
 * seconds, then start the download from the signed link it is given. The buyer keeps their place
 * (no reload, open disclosures stay open), told meanwhile that it is being prepared. Any other
 * answer, or no script, and it is a plain link: the route then sends the browser to the page
 * with the reason.
 */
export function DownloadLink({
  href,
  className,
  label,
  children,
}: {
  href: string;
  className: string;
  /** The link's accessible name, when its text alone does not say what it downloads. */
  label?: string;
  children: ReactNode;
}) {
  const [preparing, setPreparing] = useState(false);
  const waiting = useRef(false);
  const mounted = useRef(true);
  useEffect(() => {
    mounted.current = true;
    return () => {
      mounted.current = false;
    };
  }, []);

  async function download(event: MouseEvent<HTMLAnchorElement>) {
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    if (waiting.current) return;
    waiting.current = true;
    try {
      for (;;) {
        const answer = await fetch(href, { headers: { Accept: "application/json" } });
        if (answer.status === 202) {
          setPreparing(true);
          const seconds = Number(answer.headers.get("Retry-After")) || DEFAULT_RETRY_SECONDS;
          await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
          if (!mounted.current) return;
          continue;
        }
        const type = answer.headers.get("Content-Type") ?? "";
        if (answer.ok && type.startsWith("application/json")) {
          window.location.assign(((await answer.json()) as HandedOut).url);
        } else {
          window.location.assign(href); // the route answers a navigation with the page that says why
        }
        return;
      }
    } catch {
      window.location.assign(href);
    } finally {
      waiting.current = false;
      if (mounted.current) setPreparing(false);
    }
  }

  return (
    <span className="inline-flex flex-wrap items-center">
      <a href={href} className={className} aria-label={label} onClick={download} aria-busy={preparing || undefined}>
        {children}
      </a>
      <span role="status" className={preparing ? "ml-2 text-xs text-slate-600" : ""} data-testid="download-preparing">
        {preparing ? "Being prepared: the download starts when it is ready." : ""}
      </span>
    </span>
  );
}
