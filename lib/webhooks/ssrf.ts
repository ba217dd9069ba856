import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import http from "node:http";
import https from "node:https";
import type { LookupFunction } from "node:net";
import ipaddr from "ipaddr.js";
import { isAlwaysForbiddenAddress, isForbiddenAddress } from "./addresses";

/**
 * Webhook deliveries go to addresses buyers choose, so they must not become a way into the
 * server's own network: only public unicast addresses are reached (no private, loopback,
 * link-local, metadata, multicast or reserved ones, in any IPv6 form carrying one: see
 * ./addresses), checked on the address actually connected to: the check sits in the DNS lookup
 * the socket uses, so a name cannot resolve to a public address for the check and a private one
 * for the connection (DNS rebinding). WEBHOOK_ALLOW_PRIVATE=true (tests, single-host setups)
 * allows private and loopback addresses, never cloud metadata or link-local ones.
 */
export { isAlwaysForbiddenAddress, isForbiddenAddress };

/**
 * A developer tries webhooks and exports against servers on their own machine
 * (http://127.0.0.1:4000/hooks, a MinIO at http://127.0.0.1:9000), so outside production private
 * and loopback addresses (and plain http:// where the setting is about it) are allowed unless the
 * setting says "false". Outside production means NODE_ENV development or test: an unset NODE_ENV
 * (a standalone worker started without it) keeps the production rule, so a forgotten variable never
 * opens the private network. `npm run dev`/`npm start` set NODE_ENV (scripts/serve.ts). The one
 * rule of both webhooks and exports (lib/exports/network.ts).
 */
export function localNetworkSettingAllows(
  name: "WEBHOOK_ALLOW_PRIVATE" | "WEBHOOK_ALLOW_INSECURE" | "EXPORT_ALLOW_PRIVATE",
  env: NodeJS.ProcessEnv | Record<string, string | undefined> = process.env,
): boolean {
  const value = env[name];
  if (value === "true" || value === "false") return value === "true";
  return env.NODE_ENV === "development" || env.NODE_ENV === "test";
}

export const privateAddressesAllowed = (): boolean => localNetworkSettingAllows("WEBHOOK_ALLOW_PRIVATE");
/** Plain http:// endpoint URLs, to a loopback host only. */
export const insecureLoopbackAllowed = (): boolean => localNetworkSettingAllows("WEBHOOK_ALLOW_INSECURE");

/** Which addresses deliveries refuse: isForbiddenAddress, or with WEBHOOK_ALLOW_PRIVATE=true isAlwaysForbiddenAddress. */
export type AddressFilter = (address: string) => boolean;
export const configuredAddressFilter = (): AddressFilter =>
  privateAddressesAllowed() ? isAlwaysForbiddenAddress : isForbiddenAddress;

export class ForbiddenAddressError extends Error {}

/** A DNS lookup for sockets that refuses a name with any forbidden address among its answers. */
export function guardedLookup(isForbidden: AddressFilter = configuredAddressFilter()): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, "", 0);
      const forbidden = addresses.find(({ address }) => isForbidden(address));
      if (forbidden) {
        return callback(
          new ForbiddenAddressError(`${hostname} resolves to ${forbidden.address}, a private or reserved address`),
          "",
          0,
        );
      }
      if (options.all) return callback(null, addresses as never, 0);
      const [first] = addresses;
      if (!first) return callback(new Error(`${hostname} has no address`), "", 0);
      callback(null, first.address, first.family);
    });
  };
}

export type PostResult =
  { ok: true; status: number; excerpt: string; durationMs: number } | { ok: false; error: string; durationMs: number };

/** How much of a receiver's answer is read (and kept as an excerpt); the rest is not waited for. */
export const RESPONSE_READ_LIMIT = 64 * 1024;
export const RESPONSE_EXCERPT_LENGTH = 1000;

/**
 * POSTs `body` to `url` once: no redirect is followed (a 3xx is an answer like any other), at most
 * RESPONSE_READ_LIMIT bytes of the answer are read, and the whole exchange is given `timeoutMs`.
 * Never throws: a refusal, a network error or the timeout is an `error`.
 */
export function postOnce(
  url: string,
  body: string,
  headers: Record<string, string>,
  { timeoutMs, isForbidden = configuredAddressFilter() }: { timeoutMs: number; isForbidden?: AddressFilter },
): Promise<PostResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  return new Promise((resolve) => {
    let settled = false;
    // Set once the request exists; `finish` may run before that (a refused URL).
    const timeout: { timer?: NodeJS.Timeout } = {};
    const finish = (result: PostResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timeout.timer);
      resolve(result);
    };
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return finish({ ok: false, error: "not a valid URL", durationMs: 0 });
    }
    // An IP literal is connected to without any lookup, so it is checked here.
    const literal = target.hostname.replace(/^\[|\]$/g, "");
    if (ipaddr.isValid(literal) && isForbidden(literal)) {
      return finish({ ok: false, error: `${literal} is a private or reserved address`, durationMs: 0 });
    }
    const client = target.protocol === "https:" ? https : http;
    const request = client.request(target, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      lookup: guardedLookup(isForbidden),
      agent: false,
    });
    timeout.timer = setTimeout(() => {
      const limit = timeoutMs >= 1000 ? `${Math.round(timeoutMs / 1000)} s` : `${timeoutMs} ms`;
      request.destroy(new Error(`no answer within ${limit}`));
    }, timeoutMs);
    request.on("socket", (socket) => {
      // Belt and braces: the address the socket really connected to.
      socket.once("connect", () => {
        if (socket.remoteAddress && isForbidden(socket.remoteAddress)) {
          request.destroy(new ForbiddenAddressError(`connected to ${socket.remoteAddress}, a private address`));
        }
      });
    });
    request.on("error", (error) => finish({ ok: false, error: error.message, durationMs: elapsed() }));
    request.on("response", (response) => {
      const chunks: Buffer[] = [];
      let read = 0;
      const done = () =>
        finish({
          ok: true,
          status: response.statusCode ?? 0,
          excerpt: Buffer.concat(chunks).toString("utf8").slice(0, RESPONSE_EXCERPT_LENGTH),
          durationMs: elapsed(),
        });
      response.on("data", (chunk: Buffer) => {
        if (read < RESPONSE_READ_LIMIT) chunks.push(chunk.subarray(0, RESPONSE_READ_LIMIT - read));
        read += chunk.length;
        if (read >= RESPONSE_READ_LIMIT) {
          done();
          response.destroy();
        }
      });
      response.on("end", done);
      response.on("error", done);
    });
    request.end(body);
  });
}
