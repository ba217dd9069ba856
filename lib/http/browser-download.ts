import { problemResponse } from "./problem";
import { noStoreRedirect, plainNotFound } from "./responses";
import { requestIdFrom } from "../request-id";
import type { ActionResult } from "../auth/buyer-action";
import { downloadTargetFor, filePreview, type Preview } from "../datasets/access";
import { RENDITION_FORMATS, type RenditionFormat } from "../data-formats";
import { AppError } from "../errors";
import { publicOrigin } from "../site";
import { tablePreview } from "../tables/history";
import { downloadUrl } from "../downloads/links";

/** What the dashboard or a share page may reach: one file of one of the buyer's orders. */
type BrowserTarget = { buyerId: string; orderId: string; fileId: string };

/** Rows a preview in the browser shows: a first look, the download has the rest. */
export const BROWSER_PREVIEW_ROWS = 20;

/**
 * A download started in a browser (the dashboard or a share page) for a file the caller may
 * reach: a redirect to the same short-lived signed link as the API, of the original or, with
 * `?format=parquet|csv|jsonl`, of that rendition. Back to `orderPage` where the page can say why:
 * `?refused` for an order that is not delivered, `?preparing=<file>&format=` for a rendition
 * still being made. Anything else a plain 404.
 *
 * The page's own script asks with `Accept: application/json` (components/download-link.tsx), to
 * wait in place rather than be sent back: it gets the API's answers, `{ "url": <signed link> }`
 * once the file can be had, 202 rendition_pending with Retry-After while it is being made, and
 * any other refusal as problem+json.
 */
export async function browserDownload(
  request: Request,
  target: BrowserTarget & { orderPage: string },
  /** Called once the file is handed out (e.g. to count a share link's downloads). */
  onHandedOut?: () => Promise<void>,
): Promise<Response> {
  const origin = publicOrigin(request);
  const asked = new URL(request.url).searchParams.get("format") ?? undefined;
  const format = renditionFormatOf(asked);
  if (asked !== undefined && !format) {
    return plainNotFound(`No such format here: ask for ${RENDITION_FORMATS.join(", ")}.`);
  }
  const byScript = request.headers.get("accept")?.includes("application/json") ?? false;
  try {
    const file = await downloadTargetFor(target.buyerId, target.orderId, target.fileId, format);
    const location = await downloadUrl(file, origin);
    await onHandedOut?.();
    return byScript ? handedOutJson(location) : noStoreRedirect(location);
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    if (byScript) return problemResponse(error, requestIdFrom(request.headers.get("x-request-id")));
    if (error.code === "order_not_delivered") return noStoreRedirect(`${origin}${target.orderPage}?refused`, 303);
    if (error.code === "rendition_pending") {
      const preparing = new URLSearchParams({ preparing: target.fileId, format: format! });
      return noStoreRedirect(`${origin}${target.orderPage}?${preparing}`, 303);
    }
    if (error.code === "preview_not_available") return plainNotFound(error.message);
    return plainNotFound("No such order or file here.");
  }
}

/** What a page's script is answered when the download may start: the signed link to go to. */
export type HandedOut = { url: string };

function handedOutJson(url: string): Response {
  const body: HandedOut = { url };
  return new Response(JSON.stringify(body), {
    headers: { "Content-Type": "application/json", "Cache-Control": "private, no-store" },
  });
}

export type PreviewResult = ActionResult<{ preview: Preview }>;

/** A file's first rows for a preview in the browser: the API's checks, a refusal as a message to show. */
export function browserPreview(target: BrowserTarget): Promise<PreviewResult> {
  return previewResult(() => filePreview(target.buyerId, target.orderId, target.fileId, BROWSER_PREVIEW_ROWS));
}

/** A table's first rows as of its current version, for a preview in the browser. */
export function browserTablePreview(target: {
  buyerId: string;
  orderId: string;
  table: string;
}): Promise<PreviewResult> {
  return previewResult(() => tablePreview(target.buyerId, target.orderId, target.table, BROWSER_PREVIEW_ROWS));
}

async function previewResult(read: () => Promise<Preview>): Promise<PreviewResult> {
  try {
    return { ok: true, preview: await read() };
  } catch (error) {
    if (error instanceof AppError) return { ok: false, error: error.message };
    throw error;
  }
}

/** The rendition a page was sent back for by browserDownload (`?preparing=<file>&format=`), if its query names one. */
export function preparingRendition(query: {
  preparing?: string;
  format?: string;
}): { fileId: string; format: RenditionFormat } | undefined {
  const format = renditionFormatOf(query.format);
  return query.preparing && format ? { fileId: query.preparing, format } : undefined;
}

const renditionFormatOf = (value: string | undefined): RenditionFormat | undefined =>
  RENDITION_FORMATS.find((known) => known === value);
