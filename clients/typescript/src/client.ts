import createFetchClient from "openapi-fetch";
import path from "node:path";
import { contractMethods } from "./contract.js";
import { exploreMethods } from "./explore.js";
import { downloadVerified, type CheckedDownload, type DownloadResult, type ExpectedFile } from "./download.js";
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
import type { QualityReport } from "./quality.js";

export type Order = components["schemas"]["Order"];
export type OrderFile = components["schemas"]["File"];

/** What a version changed against the previous one (`updated` counts pre- and post-image pairs). */
export type Changes = NonNullable<components["schemas"]["Version"]["changes"]>;
/** A column of a table, as DuckDB names its type. */
export type Column = components["schemas"]["Column"];
/** A named dataset of an order, as of its current version (`version` null before the first). */
export type Table = components["schemas"]["Table"];
/** One version of a table: its parts (`files`) and what it changed. */
export type Version = components["schemas"]["Version"];

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
    try {
      return await redirectLink(url, format && `file ${fileId} as ${format} is being made`);
    } catch (error) {
      if (format && error instanceof DatasetAccessError && error.code === "preview_not_available")
        throw new NoRenditionError(error.detail);
      throw error;
    }
  }

  /**
   * The signed link `url` answers with its 302, not followed (http(s) only). With `pending` (what is
   * being made), a 202 throws RenditionPendingError with its Retry-After; any other answer, its problem.
   */
  async function redirectLink(url: string, pending: string | undefined): Promise<string> {
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
    if (pending && response.status === 202) {
      await response.body?.cancel();
      throw new RenditionPendingError(pending, renditionRetryMs(response.headers.get("retry-after")));
    }
    throw await problemError(response);
  }

  /**
   * The link `ask` gives, asked again after each Retry-After while the server makes what it links
   * to, for at most `waitMs` in all; then RenditionPendingError naming `what`. `waited`: it was not
   * ready at first.
   */
  async function linkWhenReady(
    ask: () => Promise<string>,
    what: string,
    waitMs: number,
  ): Promise<{ link: string; waited: boolean }> {
    const deadline = Date.now() + waitMs;
    for (let waited = false; ; waited = true) {
      try {
        return { link: await ask(), waited };
      } catch (error) {
        if (!(error instanceof RenditionPendingError)) throw error;
        const left = deadline - Date.now();
        if (left <= 0)
          throw new RenditionPendingError(`${what}: still being made when the wait for it ran out`, error.retryAfterMs);
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
      const { link, waited } = await linkWhenReady(
        () => signedLink(resolvedOrder.id, resolvedFile.id, rendition),
        `${resolvedFile.name} as ${rendition}`,
        renditionWaitMs,
      );
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

  const ordersPath = (orderId: string) => `${apiBase(baseUrl!)}/orders/${encodeURIComponent(orderId)}`;
  const tablePath = (orderId: string, table: string) => `${ordersPath(orderId)}/tables/${encodeURIComponent(table)}`;

  /** GET a URL of the API as text of the type `accept` names, or the typed exception for its problem answer. */
  async function getText(url: string, accept: string): Promise<string> {
    const response = await transport.fetch(url, { headers: { authorization: `Bearer ${apiKey}`, accept } });
    if (response.status !== 200) throw await problemError(response);
    return response.text();
  }

  /** GET a URL of the API as JSON, or the typed exception for its problem answer. */
  const getJson = async <T>(url: string): Promise<T> => JSON.parse(await getText(url, "application/json")) as T;

  /** The order's tables, each as of its current version (an order read; `[]` from a server without tables). */
  async function listTables(orderId: string): Promise<Table[]> {
    return (await getOrder(orderId)).tables ?? [];
  }

  /** One table of an order, as of its current version: 404 table_not_found when the order has none of that name. */
  function getTable(orderId: string, table: string): Promise<Table> {
    return getJson<Table>(tablePath(orderId, table));
  }

  /** Every version of a table that is kept (pruned ones are gone), newest first, page by page. */
  async function* listVersions(
    orderId: string,
    table: string,
    { pageSize = 50 }: { pageSize?: number } = {},
  ): AsyncGenerator<Version> {
    let offset: number | null = 0;
    while (offset !== null) {
      const page: { data: Version[]; next_offset: number | null } = await getJson(
        `${tablePath(orderId, table)}/versions?limit=${pageSize}&offset=${offset}`,
      );
      yield* page.data;
      offset = page.next_offset;
    }
  }

  /** One version of a table: 404 version_not_found when it was never made, or was pruned. */
  function getVersion(orderId: string, table: string, version: number): Promise<Version> {
    return getJson<Version>(`${tablePath(orderId, table)}/versions/${version}`);
  }

  /** A version's quality report (contract Part 6), by default the current version's (the table is read first). */
  async function getQuality(orderId: string, table: string, version?: number): Promise<QualityReport> {
    const number = version ?? (await getTable(orderId, table)).version;
    if (number === null)
      throw new DatasetAccessError(404, { code: "version_not_found", detail: `Table ${table} has no version yet.` });
    return getJson<QualityReport>(`${tablePath(orderId, table)}/versions/${number}/quality`);
  }

  /**
   * A fresh signed link to a version's change file (parquet, or its csv or jsonl form), not
   * followed. While the server makes it: RenditionPendingError (its 202) with the Retry-After.
   */
  async function changesLink(
    orderId: string,
    table: string,
    version: number,
    format: RenditionFormat = "parquet",
  ): Promise<string> {
    const url = `${tablePath(orderId, table)}/versions/${version}/changes?format=${encodeURIComponent(format)}`;
    return redirectLink(url, `the change file of ${table} version ${version} as ${format} is being made`);
  }

  /**
   * Downloads a version's change file to `dest`: waits while the server makes it (each 202's
   * Retry-After, at most `waitMs` in all, then RenditionPendingError), resumes `dest.part`, and
   * checks the bytes against the size the link answers and the sha256 its strong ETag is (this
   * server's links; S3's ETags are no sha256, and the API gives none for change files): the result
   * says which (`verifiedBy`), with the sha256 computed of what was written.
   */
  async function downloadChanges(
    orderId: string,
    table: string,
    version: number,
    dest: string,
    {
      format = "parquet",
      waitMs = options.renditionWaitMs ?? DEFAULT_RENDITION_WAIT_MS,
      onProgress,
    }: { format?: RenditionFormat; waitMs?: number; onProgress?: (bytes: number) => void } = {},
  ): Promise<CheckedDownload> {
    const { link: first } = await linkWhenReady(
      () => changesLink(orderId, table, version, format),
      `the change file of ${table} version ${version} as ${format}`,
      waitMs,
    );
    let firstLink: string | undefined = first;
    const nextLink = async () => {
      const link = firstLink ?? (await changesLink(orderId, table, version, format));
      firstLink = undefined;
      return link;
    };
    return downloadVerified(nextLink, dest, "from-response", { fetch: baseFetch, onProgress });
  }

  const explore = exploreMethods(getJson, ordersPath);

  return {
    orders: { list: listOrders, get: getOrder },
    /** One read-only SELECT over an order's tables, run on the server. */
    sql: explore.sql,
    files: { download, signedLink },
    tables: {
      list: listTables,
      get: getTable,
      versions: listVersions,
      version: getVersion,
      quality: getQuality,
      changesLink,
      downloadChanges,
      /** A page of a table's rows, filtered on the server; rowPages follows every page. */
      rows: explore.rows,
      rowPages: explore.rowPages,
      /** The table's data contract (ODCS v3.1.0): `contract` the JSON document, `contractYaml` the YAML text. */
      ...contractMethods(getText, tablePath),
    },
    /** How long a download waits in all for a rendition being made (ms). */
    renditionWaitMs: options.renditionWaitMs ?? DEFAULT_RENDITION_WAIT_MS,
    /** How many 429s this client has met (a paced client alone on its account meets none). */
    get rateLimitedResponses() {
      return transport.rateLimited;
    },
  };
}
