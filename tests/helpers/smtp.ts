import net from "node:net";
import { SMTPServer } from "smtp-server";
import { freePort } from "./server";

export type ReceivedMail = { to: string[]; raw: string };

/**
 * A real SMTP server on loopback (no TLS, any or no login) that hands every message it accepts
 * to `onMessage`; with `refuseRecipients` it refuses every recipient (550) instead.
 */
export async function startSmtpServer(
  options: { onMessage?: (mail: ReceivedMail) => Promise<void> | void; refuseRecipients?: boolean } = {},
): Promise<{ url: string; close: () => Promise<void> }> {
  const port = await freePort();
  const smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    onRcptTo(_address, _session, callback) {
      callback(
        options.refuseRecipients ? Object.assign(new Error("Mailbox unavailable"), { responseCode: 550 }) : null,
      );
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        const to = session.envelope.rcptTo.map((recipient) => recipient.address.toLowerCase());
        Promise.resolve(options.onMessage?.({ to, raw: Buffer.concat(chunks).toString("utf8") })).then(
          () => callback(),
          callback,
        );
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(port, "127.0.0.1", resolve));
  return { url: `smtp://127.0.0.1:${port}`, close: () => new Promise<void>((resolve) => smtp.close(() => resolve())) };
}

/** A "mail server" that accepts connections and never says a word, as a stalled one does. */
export async function startSilentServer(): Promise<{ url: string; close: () => Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return {
    url: `smtp://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
