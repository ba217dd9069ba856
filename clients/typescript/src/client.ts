import createFetchClient from "openapi-fetch";
import path from "node:path";
import { downloadVerified, type DownloadResult } from "./download.js";
import { DatasetAccessError } from "./errors.js";
import type { components, paths } from "./generated/api.js";
import { problemError, Transport, type RetryOptions } from "./http.js";

export type Order = components["schemas"]["Order"];
export type OrderFile = components["schemas"]["File"];

export type ClientOptions = RetryOptions & {
  /** The server: `https://data.example.com` (or with `/api/v1`). Default: DATASET_ACCESS_URL. */
  baseUrl?: string;
  /** An API key with datasets:read. Default: DATASET_ACCESS_KEY. */
  apiKey?: string;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
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

  /** A fresh signed link for one file (the API's 302), without following it. */
  async function signedLink(orderId: string, fileId: string): Promise<string> {
    const url = `${apiBase(baseUrl!)}/orders/${encodeURIComponent(orderId)}/files/${encodeURIComponent(fileId)}`;
    const response = await transport.fetch(url, {
      headers: { authorization: `Bearer ${apiKey}` },
      redirect: "manual",
    });
    const location = response.headers.get("location");
    if (response.status === 302 && location) {
      await response.body?.cancel();
      return new URL(location, url).toString();
    }
    throw await problemError(response);
  }

  /**
   * Downloads a file of a delivered order to `dest` (a file path, or a directory to put it in
   * under its own name): resumes a partial download, verifies size and sha256, and renames into
   * place only then.
   */
  async function download(
    order: Order | string,
    file: OrderFile | string,
    dest: string,
    { onProgress }: { onProgress?: (bytes: number) => void } = {},
  ): Promise<DownloadResult & { path: string }> {
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
    const target = dest.endsWith(path.sep) || dest.endsWith("/") ? path.join(dest, resolvedFile.name) : dest;
    const result = await downloadVerified(() => signedLink(resolvedOrder.id, resolvedFile.id), target, resolvedFile, {
      fetch: baseFetch,
      onProgress,
    });
    return { ...result, path: target };
  }

  return {
    orders: { list: listOrders, get: getOrder },
    files: { download, signedLink },
    /** How many 429s this client has met (a paced client alone on its account meets none). */
    get rateLimitedResponses() {
      return transport.rateLimited;
    },
  };
}
