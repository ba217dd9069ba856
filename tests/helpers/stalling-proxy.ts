import net from "node:net";

/**
 * A loopback TCP proxy in front of a real server that can stall like a host dropping packets:
 * while stalled it still accepts connections (the kernel does), but forwards nothing in either
 * direction; what was sent meanwhile is delivered once the stall ends, as TCP retransmission
 * would. It counts the connections it holds, so a test can see the client close them.
 */
export type StallingProxy = {
  url: (databaseUrl: string) => string;
  stall: () => void;
  resume: () => void;
  openConnections: () => number;
  close: () => Promise<void>;
};

export async function startStallingProxy(target: { host: string; port: number }): Promise<StallingProxy> {
  let stalled = false;
  const held = new Set<() => void>();
  const sockets = new Set<net.Socket>();

  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    sockets.add(client);
    const forward = (from: net.Socket, to: net.Socket) => {
      const queued: Buffer[] = [];
      const flush = () => {
        for (const chunk of queued.splice(0)) to.write(chunk);
      };
      held.add(flush);
      from.on("data", (chunk: Buffer) => (stalled ? queued.push(chunk) : to.write(chunk)));
      from.on("close", () => {
        held.delete(flush);
        to.destroy();
      });
      from.on("error", () => to.destroy());
    };
    forward(client, upstream);
    forward(upstream, client);
    client.on("close", () => sockets.delete(client));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;

  return {
    url: (databaseUrl) => {
      const url = new URL(databaseUrl);
      url.hostname = "127.0.0.1";
      url.port = String(port);
      return url.toString();
    },
    stall: () => void (stalled = true),
    resume: () => {
      stalled = false;
      for (const flush of held) flush();
    },
    openConnections: () => sockets.size,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
