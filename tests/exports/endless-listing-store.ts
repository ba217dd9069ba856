import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A hostile store on loopback: a proxy in front of a real one (s3rver or Azurite) that passes every
 * request on, except listings, which it answers itself, forever: S3 with `IsTruncated=true`, a new
 * continuation token and no keys; Azure with an empty page and a new marker. What a store the
 * buyer controls can do to an export; it counts the listing requests it answered.
 */
export type EndlessListingStore = { origin: string; listings: () => number; close: () => Promise<void> };

export async function startEndlessListingStore(kind: "s3" | "azure", upstream: string): Promise<EndlessListingStore> {
  const target = new URL(upstream);
  let listings = 0;
  const server = http.createServer((request, response) => {
    const url = new URL(request.url ?? "/", "http://store");
    const listing =
      request.method === "GET" &&
      (kind === "s3" ? url.searchParams.has("list-type") : url.searchParams.get("comp") === "list");
    if (listing) {
      listings++;
      request.resume();
      response.writeHead(200, { "Content-Type": "application/xml" });
      response.end(kind === "s3" ? s3Page(url) : azurePage(url));
      return;
    }
    const forwarded = http.request(
      {
        host: target.hostname,
        port: target.port,
        method: request.method,
        path: request.url,
        headers: request.headers,
      },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    forwarded.on("error", () => response.destroy());
    request.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    listings: () => listings,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function s3Page(url: URL): string {
  const bucket = url.pathname.split("/")[1] ?? "";
  return `<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>${bucket}</Name><Prefix>${url.searchParams.get("prefix") ?? ""}</Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys><Delimiter>/</Delimiter><IsTruncated>true</IsTruncated><NextContinuationToken>${randomUUID()}</NextContinuationToken></ListBucketResult>`;
}

function azurePage(url: URL): string {
  return `<?xml version="1.0" encoding="utf-8"?>
<EnumerationResults ServiceEndpoint="http://127.0.0.1/" ContainerName="${url.pathname.split("/")[2] ?? ""}"><Prefix>${url.searchParams.get("prefix") ?? ""}</Prefix><MaxResults>1000</MaxResults><Delimiter>/</Delimiter><Blobs /><NextMarker>${randomUUID()}</NextMarker></EnumerationResults>`;
}
