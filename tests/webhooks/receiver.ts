import http from "node:http";
import type { AddressInfo } from "node:net";

export type Received = { headers: http.IncomingHttpHeaders; body: string; at: number };
/** What the receiver answers to its n-th request (0-based): a status, a status with a body, or "hang" (never answers). */
export type Answer = number | { status: number; body: string } | "hang";

/** A real HTTP receiver on loopback that records every request and answers as told. */
export async function startReceiver(answer: (index: number) => Answer = () => 200, host = "127.0.0.1") {
  const received: Received[] = [];
  const hanging = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      const index = received.length;
      received.push({ headers: req.headers, body, at: Date.now() });
      const reply = answer(index);
      if (reply === "hang") return void hanging.add(res);
      const { status, body: answerBody } =
        typeof reply === "number" ? { status: reply, body: `answer ${reply}` } : reply;
      res.writeHead(status, { "content-type": "text/plain" }).end(answerBody);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  const origin = host.includes(":") ? `http://[${host}]:${port}` : `http://${host}:${port}`;
  return {
    url: `${origin}/hooks`,
    port,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of hanging) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
