import { spawn, type ChildProcess, type StdioOptions } from "node:child_process";
import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import path from "node:path";
import { disconnectDb } from "../lib/db/client";
import { MAIL_NOT_CONFIGURED, mailDelivery } from "../lib/auth/mail";
import { DATA_DIR, ensureDataDir } from "../lib/db/config";
import { prepareDatabase } from "../lib/db/runtime";
import { privateTempRoot } from "../lib/engine/engine";
import { removeLeftWork } from "../lib/engine/left-work";
import { appSecret, MIN_SECRET_LENGTH } from "../lib/secrets";
import { logger } from "../lib/log";
import { redactingLines } from "../lib/log-redaction";
import { configuredOrigin } from "../lib/site";
import { seedDemo } from "./seed-demo";

/**
 * `npm run dev` / `npm start`: prepares the database, then runs the HTTP server (scripts/http-server.ts,
 * Next.js in development or production mode).
 * Without DATABASE_URL it starts the embedded PostgreSQL (loading the demo data the first time)
 * and stops it when Next.js exits. With DATABASE_URL it applies pending migrations first, under
 * an advisory lock, so several instances may start at once (MIGRATE_ON_START=false skips this).
 */
const mode = process.argv[2];
if (mode !== "dev" && mode !== "start") {
  console.error("Usage: tsx scripts/serve.ts dev|start [-p PORT] [-H HOSTNAME]");
  process.exit(1);
}
// As `next dev`/`next start` do: the HTTP server and its in-process job worker read it (webhook
// receivers on this machine are allowed in development only: lib/webhooks/ssrf.ts).
Object.assign(process.env, { NODE_ENV: mode === "start" ? "production" : "development" });
const log = (message: string) => logger().info(message);
function fail(error: unknown): never {
  logger().fatal((error as Error).message);
  process.exit(1);
}

// Checked before anything else: a secret that is too short would start a server whose every
// sign-in and download fails.
try {
  if (!process.env.AUTH_SECRET && !process.env.NEXTAUTH_SECRET) process.env.AUTH_SECRET = await persistedSecret();
  process.env.AUTH_SECRET = appSecret();
} catch (error) {
  fail(error);
}

// The data engine's temporary directory must be this user's own, or buyers' data could leak through it.
try {
  await removeLeftWork(await privateTempRoot());
} catch (error) {
  fail(error);
}

const usesEmbedded = !process.env.DATABASE_URL;
let database: Awaited<ReturnType<typeof prepareDatabase>>;
try {
  database = await prepareDatabase({ migrateConfigured: process.env.MIGRATE_ON_START !== "false", log });
  if (database.embeddedCreated) await seedDemo(log);
  await disconnectDb();
} catch (error) {
  fail(error);
}
log(
  usesEmbedded
    ? `Using the embedded PostgreSQL on port ${new URL(database.url).port}.`
    : "Using the database at DATABASE_URL.",
);

// Sign-in links are built from NEXTAUTH_URL, never from the request's Host header, which a client can forge.
process.env.NEXTAUTH_URL ??= configuredOrigin() || `http://localhost:${process.env.PORT ?? "3000"}`;
if (mode === "start" && !configuredOrigin() && !process.env.APP_URL) {
  logger().warn(
    `APP_URL is not set, so sign-in e-mails link to ${process.env.NEXTAUTH_URL}. Set APP_URL to this server's public URL.`,
  );
}
logMailDelivery();
if (process.env.CLOCK_START) {
  logger().warn(`CLOCK_START=${process.env.CLOCK_START}: the Social API allowance runs on a test clock.`);
}

// A product server should not phone home; set NEXT_TELEMETRY_DISABLED=0 to allow Next.js telemetry.
const env = { NEXT_TELEMETRY_DISABLED: "1", ...process.env };
// The development server (its mailbox page shows sign-in links) listens on loopback only, unless
// given a hostname: `npm run dev -- -H 0.0.0.0`.
const nextArgs = process.argv.slice(3);
if (mode === "dev" && !nextArgs.some((arg) => arg === "-H" || arg.startsWith("--hostname"))) {
  nextArgs.push("--hostname", "127.0.0.1");
}
// Built (`npm start`: scripts/built.mjs), the HTTP server is the build's too; from source, it runs under tsx.
const httpServer = import.meta.filename.endsWith(".mjs")
  ? [path.join(import.meta.dirname, "http-server.mjs")]
  : ["--import", "tsx", path.join(import.meta.dirname, "http-server.ts")];
// In development Next.js prints every request's URL whole: a key sent as ?api_key=dak_... would land in
// the terminal and its scrollback, so that output passes through a redaction (lib/log-redaction.ts).
// Production's own request log names paths only; its output goes straight through.
const redacting = mode === "dev";
const stdio: StdioOptions = redacting ? ["inherit", "pipe", "pipe"] : "inherit";
// Piped, Next.js would drop its colours on a terminal: asked to keep them (unless FORCE_COLOR says otherwise).
const childEnv = redacting && process.stdout.isTTY ? { FORCE_COLOR: "1", ...env } : env;
const next: ChildProcess = spawn(process.execPath, [...httpServer, mode, ...nextArgs], { stdio, env: childEnv });
if (redacting) {
  next.stdout!.pipe(redactingLines()).pipe(process.stdout);
  next.stderr!.pipe(redactingLines()).pipe(process.stderr);
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => next.kill(signal));
}
next.on("exit", async (code, signal) => {
  // However it ended, the operator reads why: a crash (a signal) is otherwise silent.
  const how = signal ? `signal ${signal}` : `exit code ${code}`;
  if (signal === "SIGINT" || signal === "SIGTERM" || code === 0) log(`The HTTP server stopped (${how}).`);
  else logger().error({ exit_code: code, signal }, `The HTTP server ended unexpectedly (${how}).`);
  await database.stop();
  process.exit(code ?? (signal === "SIGINT" || signal === "SIGTERM" ? 0 : 1));
});

/** A secret kept in .data/auth-secret for a single instance that was given no AUTH_SECRET. */
async function persistedSecret(): Promise<string> {
  const file = path.join(DATA_DIR, "auth-secret");
  await ensureDataDir(); // also tightens a .data/ made by an earlier version
  const existing = await fs.readFile(file, "utf8").catch(() => "");
  if (existing.trim().length >= MIN_SECRET_LENGTH) return existing.trim();
  const secret = randomBytes(32).toString("base64url");
  await fs.writeFile(file, secret, { mode: 0o600 });
  log(`AUTH_SECRET is not set: generated one in ${file} (set AUTH_SECRET when running several instances).`);
  return secret;
}

function logMailDelivery(): void {
  const delivery = mailDelivery(process.env, mode === "start");
  if (delivery.mode === "smtp") log(`Sign-in e-mails go out over SMTP from ${delivery.from}.`);
  else if (delivery.mode === "dev-mailbox")
    log(`No EMAIL_SERVER: sign-in links appear in this log and at ${process.env.NEXTAUTH_URL}/dev/mailbox.`);
  else logger().warn(`${MAIL_NOT_CONFIGURED} Until then, sign-in is refused.`);
}
