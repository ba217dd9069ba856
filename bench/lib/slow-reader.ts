import net from "node:net";

/**
 * A client that reads its answer slowly: one GET over a raw socket (no HTTP library that would read ahead
 * into memory of its own), reading at most `bytesPerSecond` on average. After each chunk the socket is
 * paused for as long as that chunk takes at the rate, so the unread rest stays in the server and the
 * kernel's buffers, as behind a slow link. Ends when the answer is whole, the server closes, or `signal`
 * aborts (the client hangs up); never rejects.
 */
export type SlowRead = { status: number | null; bytes: number; complete: boolean; seconds: number };

export function slowRead(
  target: URL,
  headers: Record<string, string>,
  bytesPerSecond: number,
  signal: AbortSignal,
): Promise<SlowRead> {
  const started = performance.now();
  return new Promise((resolve) => {
    let status: number | null = null;
    let head = "";
    let bytes = 0;
    let complete = false;
    let resumeTimer: NodeJS.Timeout | undefined;
    const socket = net.connect({ host: target.hostname, port: Number(target.port) });
    const lines = [`GET ${target.pathname}${target.search} HTTP/1.1`, `Host: ${target.host}`, "Connection: close"];
    for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
    socket.write(lines.join("\r\n") + "\r\n\r\n");
    const hangUp = () => socket.destroy();
    signal.addEventListener("abort", hangUp, { once: true });
    if (signal.aborted) hangUp();
    socket.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
      if (status === null) {
        head += chunk.toString("latin1", 0, Math.min(chunk.length, 64));
        const match = /^HTTP\/1\.[01] (\d{3})/.exec(head);
        if (match) status = Number(match[1]);
      }
      socket.pause();
      resumeTimer = setTimeout(() => socket.resume(), (chunk.length / bytesPerSecond) * 1000);
    });
    socket.once("end", () => (complete = true));
    socket.on("error", () => {});
    socket.once("close", () => {
      clearTimeout(resumeTimer);
      signal.removeEventListener("abort", hangUp);
      resolve({ status, bytes, complete, seconds: (performance.now() - started) / 1000 });
    });
  });
}
