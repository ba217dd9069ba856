import http from "node:http";
import https from "node:https";
import net from "node:net";
import tls from "node:tls";
import ipaddr from "ipaddr.js";
import {
  ForbiddenAddressError,
  guardedLookup,
  isAlwaysForbiddenAddress,
  isForbiddenAddress,
  type AddressFilter,
  localNetworkSettingAllows,
} from "../webhooks/ssrf";

/**
 * Exports connect to hosts buyers name (an S3 endpoint, an Azure account URL, an SFTP host), so
 * every connection passes the webhooks' private-address filter on the address it resolved to and
 * the address the socket actually reached: names through a guarded DNS lookup, IP literals
 * (which skip the lookup) on connect. A redirect, an endpoint override or a re-resolved name opens a
 * new connection and is checked again. EXPORT_ALLOW_PRIVATE=true (single-host setups; the default in
 * development and test, as for webhooks: localNetworkSettingAllows) allows loopback and private
 * ranges and plain http://, never cloud metadata or link-local addresses, in any form (as webhooks).
 */

type Env = Record<string, string | undefined>;

export function exportPrivateAddressesAllowed(env: Env = process.env): boolean {
  return localNetworkSettingAllows("EXPORT_ALLOW_PRIVATE", env);
}

/** The addresses exports refuse: the webhooks' rule, or with EXPORT_ALLOW_PRIVATE=true the webhooks' rule for that case. */
export function exportAddressFilter(env: Env = process.env): AddressFilter {
  return exportPrivateAddressesAllowed(env) ? isAlwaysForbiddenAddress : isForbiddenAddress;
}

/** Why `host` (a name or IP literal) may not be connected to, or undefined: IP literals and `localhost` are judged here. */
export function literalHostProblem(
  host: string,
  isForbidden: AddressFilter = exportAddressFilter(),
): string | undefined {
  const literal = host.replace(/^\[|\]$/g, "");
  if (ipaddr.isValid(literal)) {
    return isForbidden(literal) ? `${literal} is a private, local or reserved address` : undefined;
  }
  if (/^localhost\.?$/i.test(literal) && isForbidden("127.0.0.1")) return `${host} is a local address`;
  return undefined;
}

/** Refuses a socket that reached a forbidden address (IP literals are connected to without a lookup). */
function checkConnected(socket: net.Socket, isForbidden: AddressFilter): void {
  socket.once("connect", () => {
    const address = socket.remoteAddress;
    if (address && isForbidden(address)) {
      socket.destroy(new ForbiddenAddressError(`connected to ${address}, a private, local or reserved address`));
    }
  });
}

/**
 * A socket that fails at once, for an IP literal the filter refuses: such an address is never
 * connected to at all (not a packet is sent), where a name's is refused in its lookup.
 */
function refusedLiteral(options: { host?: string | null }, isForbidden: AddressFilter): net.Socket | undefined {
  const problem = options.host ? literalHostProblem(options.host, isForbidden) : undefined;
  if (!problem) return undefined;
  const socket = new net.Socket();
  process.nextTick(() => socket.destroy(new ForbiddenAddressError(problem)));
  return socket;
}

/** HTTP and HTTPS agents whose every connection is looked up and checked by `isForbidden` (for the S3 and Azure SDKs). */
export function guardedAgents(
  isForbidden: AddressFilter = exportAddressFilter(),
  options: http.AgentOptions = { keepAlive: true, maxSockets: 16 },
): { httpAgent: http.Agent; httpsAgent: https.Agent } {
  const lookup = guardedLookup(isForbidden);
  class GuardedHttpAgent extends http.Agent {
    createConnection(connectOptions: net.NetConnectOpts, callback?: (error: Error | null, socket: net.Socket) => void) {
      const refused = refusedLiteral(connectOptions as { host?: string }, isForbidden);
      if (refused) return refused;
      const socket = net.connect({ ...connectOptions, lookup } as net.NetConnectOpts);
      checkConnected(socket, isForbidden);
      if (callback) socket.once("connect", () => callback(null, socket));
      return socket;
    }
  }
  class GuardedHttpsAgent extends https.Agent {
    createConnection(
      connectOptions: tls.ConnectionOptions,
      callback?: (error: Error | null, socket: net.Socket) => void,
    ) {
      const refused = refusedLiteral(connectOptions, isForbidden);
      if (refused) return refused;
      const socket = tls.connect({ ...connectOptions, lookup } as tls.ConnectionOptions);
      checkConnected(socket, isForbidden);
      if (callback) socket.once("secureConnect", () => callback(null, socket));
      return socket;
    }
  }
  return {
    httpAgent: boundResponses(new GuardedHttpAgent(options)),
    httpsAgent: boundResponses(new GuardedHttpsAgent(options)),
  };
}

/** What a store may send back in a body the SDKs read whole: an error's, or any answer but an object's bytes. */
export const ANSWER_LIMIT_BYTES = 64 * 1024;
/** A listing's page (1,000 keys of up to 1,024 bytes, with their metadata) is larger, but bounded too. */
export const LISTING_LIMIT_BYTES = 8 * 1024 * 1024;

/**
 * The bytes a response body may have before it is cut short, or undefined for no limit: an object's
 * bytes (a GET answered 2xx) are streamed by the caller, but the SDKs read every other body whole
 * (an error's XML to quote its message, a listing to parse it), so a store answering a 10 MB or an
 * endless error body must not be read past a limit.
 */
function bodyLimit(request: http.ClientRequest, response: http.IncomingMessage): number | undefined {
  const status = response.statusCode ?? 0;
  if (status >= 300 || request.method !== "GET") return ANSWER_LIMIT_BYTES;
  // An S3 listing (list-type=2) or an Azure one (comp=list).
  if (/[?&](list-type=|comp=list(&|$))/.test(request.path)) return LISTING_LIMIT_BYTES;
  return undefined;
}

/**
 * Every response through `agent` whose body is read whole is cut at its limit (bodyLimit): the
 * bytes beyond it are dropped, the body ends there as if the store had stopped, and the connection
 * is closed (an endless body is not read on). The SDK then parses what came, or fails to, and the
 * run's error sentence is made from that: memory stays bounded whatever the store sends.
 */
function boundResponses<Agent extends http.Agent>(agent: Agent): Agent {
  const internal = agent as unknown as { addRequest(request: http.ClientRequest, options: unknown): void };
  const addRequest = internal.addRequest.bind(agent);
  internal.addRequest = (request, options) => {
    request.prependOnceListener("response", (response: http.IncomingMessage) => {
      const limit = bodyLimit(request, response);
      if (limit !== undefined) cutBodyAt(response, limit);
    });
    addRequest(request, options);
  };
  return agent;
}

/** Ends `response`'s body after `limit` bytes, dropping the rest, and closes its connection. */
function cutBodyAt(response: http.IncomingMessage, limit: number): void {
  const push = response.push.bind(response);
  let seen = 0;
  let cut = false;
  // The HTTP parser hands the body to the response with push(): bytes past the limit never reach a reader.
  response.push = (chunk: unknown, encoding?: BufferEncoding) => {
    if (chunk === null) return cut ? false : push(null);
    if (cut) return false;
    const bytes = chunk as Buffer;
    if (seen + bytes.length <= limit) {
      seen += bytes.length;
      return push(bytes, encoding);
    }
    cut = true;
    push(bytes.subarray(0, limit - seen));
    seen = limit;
    push(null);
    // The body is over for its reader: the connection closing now is no error (and is never reused).
    response.complete = true;
    response.socket?.destroy();
    return false;
  };
}

/** A TCP connection to `host:port` for SSH, looked up and checked like every export connection. */
export function guardedSocket(
  host: string,
  port: number,
  { timeoutMs, isForbidden = exportAddressFilter() }: { timeoutMs: number; isForbidden?: AddressFilter },
): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const problem = literalHostProblem(host, isForbidden);
    if (problem) return reject(new ForbiddenAddressError(problem));
    const socket = net.connect({ host: host.replace(/^\[|\]$/g, ""), port, lookup: guardedLookup(isForbidden) });
    const timer = setTimeout(() => socket.destroy(new Error(`no connection within ${timeoutMs / 1000} s`)), timeoutMs);
    checkConnected(socket, isForbidden);
    socket.once("connect", () => {
      clearTimeout(timer);
      // checkConnected's listener ran first: a refused socket is destroyed by now.
      if (socket.destroyed) return;
      resolve(socket);
    });
    socket.once("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

export { ForbiddenAddressError };
