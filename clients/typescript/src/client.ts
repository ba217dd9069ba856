import createFetchClient from "openapi-fetch";
import path from "node:path";
import { downloadVerified, type DownloadResult, type ExpectedFile } from "./download.js";
import {
  DatasetAccessError,
  NoRenditionError,
  RenditionPendingError,
  UnsafeResponseError,
  VerificationError,
} from "./errors.js";
import { isRendition, localName, noRenditionReason, readyRendition, type RenditionFormat } from "./formats.js";
import type { components, paths } from "./generated/api.js";
import { defaultSleep, problemError, retryAfterMs, Transport, type RetryOptions } from "./http.js";
import { pathInside, targetDirectory } from "./paths.js";

export type Order = components["schemas"]["Order"];
export type OrderFile = components["schemas"]["File"];

export type ClientOptions = RetryOptions & {
  /** The server: `https://data.example.com` (or with `/api/v1`). Default: DATASET_ACCESS_URL. */
  baseUrl?: string;
  /** An API key with datasets:read. Default: DATASET_ACCESS_KEY. */
  apiKey?: string;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
  /**
   * How long a download waits in all for a rendition the server is making (its 202 answers), in
   * ms, before giving up on that file. Default: 10 minutes.
   */
  renditionWaitMs?: number;
};

export const DEFAULT_RENDITION_WAIT_MS = 10 * 60_000;

/** Waits between asking again for a rendition being made: the server's Retry-After, at least 1 s (5 s without one). */
const renditionRetryMs = (header: string | null) => Math.max(1000, retryAfterMs(header) ?? 5000);

export type FileDownload = DownloadResult & {
  path: string;
  /** The format of the bytes written: the file's own, or the rendition's. */
  format: OrderFile["format"];
  /** Whether they are a rendition the server made, verified by its own size and sha256. */
  rendition: boolean;
  size: number;
  sha256: string;
};

export type DatasetAccessClient = ReturnType<typeof createClient>;

/** The typed exception for an error answer whose body openapi-fetch has already parsed. */
function problemFrom(response: Response, problem: unknown): DatasetAccessError {
  const body = (problem && typeof problem === "object" ? problem : {}) as {
    code?: string;
    detail?: string;
    request_id?: string;
  };
  return new DatasetAccessError(response.status, {
    ...body,
    request_id: body.request_id ?? response.headers.get("x-request-id") ?? undefined,
  });
}

/** The API's base URL from a server origin or an /api/v1 URL. */
export function apiBase(url: string): string {
  const trimmed = url.replace(/\/+$/, "");
  return trimmed.endsWith("/api/v1") ? trimmed : `${trimmed}/api/v1`;
}

/**
 * A client of the Dataset Access API, typed from its OpenAPI document: orders as an async
 * iterator over every page, one order, and verified, resumable file downloads. Every request goes
 * through one Transport: retries (429 and 503 after Retry-After; network errors and other 5xx with
 * jittered backoff; never other 4xx) and pacing from the RateLimit header.
 */
export function createClient(options: ClientOptions = {}) {
  const baseUrl = options.baseUrl ?? process.env.DATASET_ACCESS_URL;
  const apiKey = options.apiKey ?? process.env.DATASET_ACCESS_KEY;
  if (!baseUrl) throw new Error("No server URL: pass baseUrl or set DATASET_ACCESS_URL.");
  if (!apiKey) throw new Error("No API key: pass apiKey or set DATASET_ACCESS_KEY.");
  const baseFetch = options.fetch ?? fetch;
  const transport = new Transport(baseFetch, options);
  const sleep = options.sleep ?? defaultSleep;
  const api = createFetchClient<paths>({
    baseUrl: apiBase(baseUrl),
    headers: { authorization: `Bearer ${apiKey}`, "user-agent": "dataset-access-client-ts/0.1" },
    fetch: (request) => transport.fetch(request),
  });

  async function getOrder(id: string): Promise<Order> {
    const { data, error, response } = await api.GET("/orders/{id}", { params: { path: { id } } });
    if (!data) throw problemFrom(response, error);
    return data;
  }

  /** Every paid order, newest first, page by page (`pageSize` 1 to 50). */
  async function* listOrders({ pageSize = 50 }: { pageSize?: number } = {}): AsyncGenerator<Order> {
    let offset: number | null = 0;
    while (offset !== null) {
      const query: { limit: string; offset: string } = { limit: String(pageSize), offset: String(offset) };
      const answer = await api.GET("/orders", { params: { query } });
      const page: components["schemas"]["OrderPage"] | undefined = answer.data;
      if (!page) throw problemFrom(answer.response, answer.error);
      yield* page.data;
      offset = page.next_offset;
    }
  }

  /**
   * A fresh signed link for one file (the API's 302), without following it; with `format`, for its
   * rendition (the file's own format gives the original). A rendition being made throws
   * RenditionPendingError (the 202), one that cannot exist NoRenditionError (the 404).
   */
  async function signedLink(orderId: string, fileId: string, format?: RenditionFormat): Promise<string> {
    const query = format ? `?format=${encodeURIComponent(format)}` : "";
    const url = `${apiBase(baseUrl!)}/orders/${encodeURIComponent(orderId)}/files/${encodeURIComponent(fileId)}${query}`;
    const response = await transport.fetch(url, {
      headers: { authorization: `Bearer ${apiKey}` },
      redirect: "manual",
    });
    const location = response.headers.get("location");
    if (response.status === 302 && location) {
      await response.body?.cancel();
      const link = new URL(location, url);
      // A file: (or any other) link would read something local rather than the server's file.
      if (link.protocol !== "https:" && link.protocol !== "http:")
        throw new UnsafeResponseError(`the download link is not http(s) but ${link.protocol}`);
      return link.toString();
    }
    if (format && response.status === 202) {
      await response.body?.cancel();
      throw new RenditionPendingError(
        `file ${fileId} as ${format} is being made`,
        renditionRetryMs(response.headers.get("retry-after")),
      );
    }
    const problem = await problemError(response);
    if (format && problem.code === "preview_not_available") throw new NoRenditionError(problem.detail);
    throw problem;
  }

  /**
   * The signed link to a rendition, asking again after each Retry-After while the server makes it,
   * for at most `waitMs` in all; then RenditionPendingError. `waited`: it was not ready at first.
   */
  async function waitedLink(
    orderId: string,
    file: OrderFile,
    format: RenditionFormat,
    waitMs: number,
  ): Promise<{ link: string; waited: boolean }> {
    const deadline = Date.now() + waitMs;
    for (let waited = false; ; waited = true) {
      try {
        return { link: await signedLink(orderId, file.id, format), waited };
      } catch (error) {
        if (!(error instanceof RenditionPendingError)) throw error;
        const left = deadline - Date.now();
        if (left <= 0) {
          throw new RenditionPendingError(
            `${file.name} as ${format}: still being made when the wait for it ran out`,
            error.retryAfterMs,
          );
        }
        const ms = Math.min(error.retryAfterMs, left);
        options.onWait?.({ reason: "rendition", ms });
        await sleep(ms);
      }
    }
  }

  /**
   * The size and sha256 a rendition must have: from the order as read, unless it was not ready
   * then (or the download had to wait for it); else from the order read again now.
   */
  async function renditionExpected(
    orderId: string,
    file: OrderFile,
    format: RenditionFormat,
    stale: boolean,
  ): Promise<ExpectedFile> {
    const listed = stale ? undefined : readyRendition(file, format);
    if (listed) return listed;
    const fresh = (await getOrder(orderId)).files.find((candidate) => candidate.id === file.id);
    const ready = fresh && readyRendition(fresh, format);
    if (!ready)
      throw new VerificationError(`${file.name}: the API gives no size and sha256 for its ${format} rendition`);
    return ready;
  }

  /**
   * Downloads a file of a delivered order to `dest` (a file path, or a directory ending in `/` to
   * put it in under its own name: a name that is unsafe there throws UnsafeResponseError): resumes
   * a partial download, verifies size and sha256, and renames into place only then.
   *
   * With `format` (parquet, csv, jsonl) it fetches the file's rendition instead (the file's own
   * format gives the original), named like the server names it (`products.csv` ->
   * `products.parquet`) and verified by the rendition's own size and sha256. While the server makes
   * it, it asks again after each Retry-After, for at most `renditionWaitMs` in all, then throws
   * RenditionPendingError. A file with no rendition possible throws NoRenditionError.
   */
  async function download(
    order: Order | string,
    file: OrderFile | string,
    dest: string,
    {
      onProgress,
      format,
      renditionWaitMs = options.renditionWaitMs ?? DEFAULT_RENDITION_WAIT_MS,
    }: { onProgress?: (bytes: number) => void; format?: RenditionFormat; renditionWaitMs?: number } = {},
  ): Promise<FileDownload> {
    const resolvedOrder = typeof order === "string" ? await getOrder(order) : order;
    const resolvedFile = resolvedOrder.files.find((candidate) =>
      typeof file === "string" ? candidate.id === file || candidate.name === file : candidate.id === file.id,
    );
    if (!resolvedFile) {
      throw new DatasetAccessError(404, {
        code: "file_not_found",
        detail: `Order ${resolvedOrder.id} has no file ${typeof file === "string" ? file : file.id}.`,
      });
    }
    const rendition = isRendition(resolvedFile, format) ? format! : undefined;
    const noRendition = rendition && noRenditionReason(resolvedFile, rendition);
    if (noRendition) throw new NoRenditionError(noRendition);
    const intoDirectory = dest.endsWith(path.sep) || dest.endsWith("/");
    const target = intoDirectory
      ? await pathInside(await targetDirectory(dest), localName(resolvedFile, format))
      : dest;
    let expected: ExpectedFile = resolvedFile;
    // The first link of a rendition is had before its sha256 is known; later attempts ask afresh.
    let firstLink: string | undefined;
    if (rendition) {
      const { link, waited } = await waitedLink(resolvedOrder.id, resolvedFile, rendition, renditionWaitMs);
      expected = await renditionExpected(resolvedOrder.id, resolvedFile, rendition, waited);
      firstLink = link;
    }
    const nextLink = async () => {
      const link = firstLink ?? (await signedLink(resolvedOrder.id, resolvedFile.id, rendition));
      firstLink = undefined;
      return link;
    };
    const result = await downloadVerified(nextLink, target, expected, { fetch: baseFetch, onProgress });
    return {
      ...result,
      path: target,
      format: rendition ?? resolvedFile.format,
      rendition: rendition !== undefined,
      size: expected.size,
      sha256: expected.sha256,
    };
  }

  return {
    orders: { list: listOrders, get: getOrder },
    files: { download, signedLink },
    /** How long a download waits in all for a rendition being made (ms). */
    renditionWaitMs: options.renditionWaitMs ?? DEFAULT_RENDITION_WAIT_MS,
    /** How many 429s this client has met (a paced client alone on its account meets none). */
    get rateLimitedResponses() {
      return transport.rateLimited;
    },
  };
}
