import { Readable } from "node:stream";
import {
  AnonymousCredential,
  BlobServiceClient,
  newPipeline,
  StorageSharedKeyCredential,
  type ContainerClient,
  type RequestPolicyFactory,
} from "@azure/storage-blob";
import ipaddr from "ipaddr.js";
import type { AzureDestinationConfig } from "../config";
import { guardedAgents } from "../network";
import { withPrefix } from "../template";
import {
  sendInParts,
  stallTimeoutMs,
  type ExpectedObject,
  type ExportSource,
  type ExportTarget,
  type Present,
  READ_LIMIT_BYTES,
  readSmall,
  WHOLE_FILE_BYTES,
  wholeVerified,
} from "./target";
import type { ListingBudget } from "./listing";

/** Blocks of 8 MiB, four staged at once and one being read: five 8 MiB buffers per copy, reused, whatever the file's size. */
export const AZURE_BLOCK_SIZE = WHOLE_FILE_BYTES;
const BLOCKS_IN_FLIGHT = 4;

/**
 * An Azure Blob Storage container (or Azurite). Blobs are block blobs: a small one is one Put Blob,
 * a larger one staged block by block and visible only once its block list is committed, so a copy
 * that stops half-way leaves nothing under its name (uncommitted blocks expire on their own). The
 * store checks each block against its MD5 and answers the MD5 of what it stored for a single put;
 * the size is checked once committed. Every connection (redirects included) goes through the
 * export address filter.
 */
export class AzureTarget implements ExportTarget {
  readonly description: string;
  private readonly container: ContainerClient;
  private readonly agents = guardedAgents();

  constructor(
    private readonly config: AzureDestinationConfig,
    secrets: { sas_token: string } | { account_key: string },
  ) {
    this.description = `container ${config.container} at ${config.account_url}${config.prefix ? ` under ${config.prefix}` : ""}`;
    const credential =
      "account_key" in secrets
        ? new StorageSharedKeyCredential(accountNameOf(config.account_url), secrets.account_key)
        : new AnonymousCredential();
    const pipeline = newPipeline(credential, {
      retryOptions: { maxTries: 2, tryTimeoutInMs: stallTimeoutMs() },
      keepAliveOptions: { enable: true },
    });
    pipeline.factories.unshift(this.agentPolicy());
    const url = "sas_token" in secrets ? `${config.account_url}?${secrets.sas_token}` : config.account_url;
    this.container = new BlobServiceClient(url, pipeline).getContainerClient(config.container);
  }

  /** Every request (and a redirect's, which reuses it) is sent through the guarded agents. */
  private agentPolicy(): RequestPolicyFactory {
    return {
      create: (next) => ({
        sendRequest: (request) => {
          request.agent = request.url.startsWith("https:") ? this.agents.httpsAgent : this.agents.httpAgent;
          return next.sendRequest(request);
        },
      }),
    };
  }

  fullKey(key: string): string {
    return withPrefix(this.config.prefix ?? "", key);
  }

  private blob(key: string) {
    return this.container.getBlockBlobClient(this.fullKey(key));
  }

  async head(key: string, signal?: AbortSignal) {
    try {
      const properties = await this.blob(key).getProperties({ abortSignal: signal });
      return { size: Number(properties.contentLength ?? 0), sha256: properties.metadata?.sha256 ?? null };
    } catch (error) {
      if ((error as { statusCode?: number }).statusCode === 404) return null;
      throw error;
    }
  }

  async list(folder: string, budget: ListingBudget) {
    const listed = new Map<string, Present>();
    const prefix = folder ? `${this.fullKey(folder)}/` : this.fullKey("");
    const pages = this.container
      .listBlobsByHierarchy("/", { prefix, includeMetadata: true, abortSignal: budget.signal })
      .byPage({ maxPageSize: 1000 });
    for await (const page of pages) {
      for (const item of page.segment.blobItems) {
        if (!item.name.startsWith(prefix)) continue;
        listed.set(`${folder ? `${folder}/` : ""}${item.name.slice(prefix.length)}`, {
          size: Number(item.properties.contentLength ?? 0),
          sha256: item.metadata?.sha256 ?? null,
        });
      }
      // Empty pages count too: a store may answer them with a new marker forever.
      if (!budget.page(page.segment.blobItems.length + (page.segment.blobPrefixes?.length ?? 0))) return null;
    }
    return listed;
  }

  async put(key: string, source: ExportSource, expected: ExpectedObject, signal: AbortSignal) {
    const blob = this.blob(key);
    const headers = { blobContentType: expected.contentType };
    const metadata = { sha256: expected.sha256 };
    if (Buffer.isBuffer(source) || expected.size <= AZURE_BLOCK_SIZE) {
      // One block (or none): read whole and checked, then a single Put Blob, which answers the MD5 of what it stored.
      const { bytes, md5: sent } = await wholeVerified(source, expected, signal);
      const answer = await blob.upload(bytes, bytes.length, {
        blobHTTPHeaders: headers,
        metadata,
        abortSignal: signal,
      });
      const stored = answer.contentMD5 ? Buffer.from(answer.contentMD5).toString("hex") : undefined;
      if (stored && stored !== sent.toString("hex")) {
        await blob.deleteIfExists().catch(() => {});
        throw new Error(
          `the store holds different bytes (MD5 ${stored}, sent ${sent.toString("hex")}); the blob was deleted`,
        );
      }
      return { verifiedBy: stored ? "the store's MD5" : "the size" };
    }
    const ids: string[] = [];
    try {
      await sendInParts(
        source,
        expected,
        { partSize: AZURE_BLOCK_SIZE, inFlight: BLOCKS_IN_FLIGHT, signal },
        async (bytes, index, md5) => {
          const id = Buffer.from(String(index).padStart(8, "0")).toString("base64");
          ids[index] = id;
          // The store refuses the block if its bytes differ from what was hashed here.
          await blob.stageBlock(id, bytes, bytes.length, { transactionalContentMD5: md5, abortSignal: signal });
        },
      );
      // Every block staged and the whole checked against the record: only now does the blob appear.
      await blob.commitBlockList(ids, { blobHTTPHeaders: headers, metadata, abortSignal: signal });
    } catch (error) {
      if (source instanceof Readable) source.destroy();
      throw error;
    }
    const landed = await blob.getProperties({ abortSignal: signal });
    if (Number(landed.contentLength) !== expected.size) {
      await blob.deleteIfExists().catch(() => {});
      throw new Error(`the committed blob is ${landed.contentLength} bytes, not ${expected.size}; it was deleted`);
    }
    return { verifiedBy: "the store's MD5 of each block and the size" };
  }

  async read(key: string): Promise<Buffer> {
    // A range, and a read that stops at the limit whatever the store sends (downloadToBuffer would allocate its claimed size).
    const answer = await this.blob(key).download(0, READ_LIMIT_BYTES + 1);
    return readSmall(answer.readableStreamBody as AsyncIterable<Uint8Array>);
  }

  async delete(key: string): Promise<void> {
    await this.blob(key).deleteIfExists();
  }

  async close(): Promise<void> {
    this.agents.httpAgent.destroy();
    this.agents.httpsAgent.destroy();
  }
}

/** The storage account's name: the first label of `<account>.blob.core.windows.net`, or the first path segment of an IP-style URL (Azurite). */
export function accountNameOf(accountUrl: string): string {
  const url = new URL(accountUrl);
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (ipaddr.isValid(host) || host === "localhost") return url.pathname.split("/").filter(Boolean)[0] ?? "";
  return host.split(".")[0]!;
}
