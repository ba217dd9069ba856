import http from "node:http";
import type { AddressInfo } from "node:net";

export type ProxiedRequest = { method: string; path: string; range?: string; status?: number };

/**
 * A reverse proxy on loopback in front of the server under test that counts what it serves: the
 * bytes of signed download links (/api/dl/) and every request with its Range header. The server
 * builds its signed links from the Host it is asked with, so downloads come through here too.
 * `throttle` bytes per second slows downloads, so a client can be stopped in the middle of one.
 */
export async function startCountingProxy(target: string) {
  const upstream = new URL(target);
  const requests: ProxiedRequest[] = [];
  const state = { downloadBytes: 0, throttle: 0 };
  const server = http.createServer((req, res) => {
    const record: ProxiedRequest = { method: req.method ?? "GET", path: req.url ?? "/", range: req.headers.range };
    requests.push(record);
    const forward = http.request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        record.status = answer.statusCode;
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        const counted = record.path.startsWith("/api/dl/");
        answer.on("data", (chunk: Buffer) => {
          if (counted) state.downloadBytes += chunk.length;
          res.write(chunk);
          if (counted && state.throttle > 0) {
            answer.pause();
            setTimeout(() => answer.resume(), (chunk.length / state.throttle) * 1000);
          }
        });
        answer.on("end", () => res.end());
        answer.on("error", () => res.destroy());
      },
    );
    forward.on("error", () => res.destroy());
    res.on("close", () => forward.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    state,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
