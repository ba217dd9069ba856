import nodemailer, { type Transporter } from "nodemailer";
import { processSingleton } from "../singleton";
import { errorFields, logger } from "../log";

/**
 * How sign-in e-mails leave the app (docs/dashboard.md, E-mail delivery):
 * - `smtp`: EMAIL_SERVER (an SMTP URL, e.g. smtp://user:pass@smtp.example.com:587) and EMAIL_FROM.
 * - `dev-mailbox`: no EMAIL_SERVER outside production. The link is printed in the server log and
 *   kept in memory for the development-only mailbox page (/dev/mailbox).
 * - `unconfigured`: production without EMAIL_SERVER. Sign-in refuses to start, with a clear error.
 */
export type MailDelivery = { mode: "smtp"; from: string } | { mode: "dev-mailbox" } | { mode: "unconfigured" };

export const DEFAULT_EMAIL_FROM = "Dataset Access <no-reply@localhost>";

export function mailDelivery(
  env: NodeJS.ProcessEnv = process.env,
  // Read as process.env.NODE_ENV so the production build fixes it ("production" under `next start`).
  production = process.env.NODE_ENV === "production",
): MailDelivery {
  if (env.EMAIL_SERVER) return { mode: "smtp", from: env.EMAIL_FROM || DEFAULT_EMAIL_FROM };
  return production ? { mode: "unconfigured" } : { mode: "dev-mailbox" };
}

export const MAIL_NOT_CONFIGURED =
  "E-mail sign-in is not configured on this server: set EMAIL_SERVER (an SMTP URL) and EMAIL_FROM.";

export type SignInMail = { to: string; url: string; subject: string; text: string; html: string };

/** The sign-in message. Plain text carries the link whole, so any mail client can open it. */
export function signInMail(to: string, url: string, validMinutes: number): SignInMail {
  const host = new URL(url).host;
  const text = [
    `Sign in to Dataset Access (${host}) with this link:`,
    "",
    url,
    "",
    `The link works once and expires in ${validMinutes} minutes.`,
    "If you did not ask to sign in, ignore this e-mail: nothing happens without the link.",
  ].join("\n");
  const escapedUrl = url.replaceAll("&", "&amp;").replaceAll('"', "&quot;").replaceAll("<", "&lt;");
  const html = `<!doctype html><html><body style="font-family:system-ui,sans-serif;color:#0f172a">
<p>Sign in to Dataset Access (${host}):</p>
<p><a href="${escapedUrl}" style="display:inline-block;padding:10px 16px;background:#0f172a;color:#fff;border-radius:6px;text-decoration:none">Sign in</a></p>
<p style="color:#475569;font-size:14px">The link works once and expires in ${validMinutes} minutes. If you did not ask to sign in, ignore this e-mail.</p>
</body></html>`;
  return { to, url, subject: "Your sign-in link for Dataset Access", text, html };
}

const DEV_MAILBOX_SIZE = 50;
const devMailbox = () => processSingleton("mail:dev-mailbox", (): (SignInMail & { sentAt: Date })[] => []);
const transport = () =>
  processSingleton("mail:transport", (): Transporter =>
    nodemailer.createTransport(withTimeouts(process.env.EMAIL_SERVER!)),
  );

/** Sends (or, in development without SMTP, logs and keeps) a sign-in e-mail. */
export async function deliverSignInMail(mail: SignInMail, delivery = mailDelivery()): Promise<void> {
  if (delivery.mode === "unconfigured") throw new Error(MAIL_NOT_CONFIGURED);
  if (delivery.mode === "dev-mailbox") {
    const messages = devMailbox();
    messages.unshift({ ...mail, sentAt: new Date() });
    messages.length = Math.min(messages.length, DEV_MAILBOX_SIZE);
    // Development only: production never logs a sign-in link.
    logger().info(`[dev mailbox] sign-in link for ${mail.to}: ${mail.url}`);
    return;
  }
  const result = await transport().sendMail({
    to: mail.to,
    from: delivery.from,
    subject: mail.subject,
    text: mail.text,
    html: mail.html,
  });
  const refused = [...result.rejected, ...(result.pending ?? [])];
  if (refused.length > 0)
    throw new Error(`The mail server refused the sign-in e-mail for ${refused.length} address(es).`);
}

/** A notice to a buyer (a key about to expire, an endpoint disabled): plain text, no link that signs in. */
export type NoticeMail = { to: string; subject: string; text: string };

/**
 * Sends a notice through the same mail server; in development without SMTP it goes to the dev
 * mailbox. Without any mail configuration it is logged and dropped (production refuses to sign
 * anyone in then, so there is nobody to tell).
 */
export async function deliverNoticeMail(mail: NoticeMail, delivery = mailDelivery()): Promise<void> {
  if (delivery.mode === "unconfigured") {
    logger().warn({ to: mail.to }, `e-mail "${mail.subject}" not sent: ${MAIL_NOT_CONFIGURED}`);
    return;
  }
  if (delivery.mode === "dev-mailbox") {
    const messages = devMailbox();
    messages.unshift({ ...mail, url: "", html: "", sentAt: new Date() });
    messages.length = Math.min(messages.length, DEV_MAILBOX_SIZE);
    logger().info(`[dev mailbox] e-mail to ${mail.to}: ${mail.subject}`);
    return;
  }
  const result = await transport().sendMail({
    to: mail.to,
    from: delivery.from,
    subject: mail.subject,
    text: mail.text,
  });
  if (result.rejected.length > 0) throw new Error(`The mail server refused the e-mail to ${mail.to}.`);
}

/**
 * Bounds on a mail server that hangs (nodemailer waits up to 2 minutes to connect and 10 minutes
 * on a silent connection), unless EMAIL_SERVER's query sets them (`?socketTimeout=60000`).
 */
const SMTP_TIMEOUTS = { connectionTimeout: "10000", greetingTimeout: "10000", socketTimeout: "30000" };

function withTimeouts(server: string): string {
  if (!URL.canParse(server)) return server;
  const url = new URL(server);
  for (const [name, value] of Object.entries(SMTP_TIMEOUTS)) {
    if (!url.searchParams.has(name)) url.searchParams.set(name, value);
  }
  return url.toString();
}

const MAX_WAITING_MAILS = 100;
const CONCURRENT_SENDS = 2;
const queue = () => processSingleton("mail:queue", () => ({ waiting: [] as SignInMail[], sending: 0 }));

/**
 * Sends a sign-in e-mail off the request path, so that the answer to a sign-in request is the
 * same, in content and timing, whether an e-mail goes out or not and whatever the mail server
 * does. A failure is logged (without the link) and the buyer can ask again. For now an in-process
 * queue of at most MAX_WAITING_MAILS, CONCURRENT_SENDS at a time; this function is the one seam a
 * durable job queue replaces.
 */
export function sendSignInMailLater(mail: SignInMail): void {
  const { waiting } = queue();
  if (waiting.length >= MAX_WAITING_MAILS) {
    logger().error(
      { to: mail.to },
      `sign-in e-mail dropped: ${MAX_WAITING_MAILS} are already waiting for the mail server`,
    );
    return;
  }
  waiting.push(mail);
  sendWaitingMails();
}

function sendWaitingMails(): void {
  const state = queue();
  while (state.sending < CONCURRENT_SENDS && state.waiting.length > 0) {
    const mail = state.waiting.shift()!;
    state.sending++;
    deliverSignInMail(mail)
      .catch((error: Error) =>
        logger().error(
          { to: mail.to, ...errorFields(error) },
          `Sign-in e-mail to ${mail.to} not sent: ${error.message}`,
        ),
      )
      .finally(() => {
        state.sending--;
        sendWaitingMails();
      });
  }
}

/** The development mailbox, newest first (empty outside development). */
export function devMailboxMessages(): readonly (SignInMail & { sentAt: Date })[] {
  return mailDelivery().mode === "dev-mailbox" ? devMailbox() : [];
}
