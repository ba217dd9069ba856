import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import path from "node:path";
import { db } from "../../lib/db/client";
import type { TestServer } from "./server";

/**
 * Calls a dashboard server action over HTTP as the browser does: the action's id (from the
 * build's server-reference manifest), the page it belongs to, the same Origin and a session
 * cookie. Answers what the action returned.
 */

type Manifest = { node: Record<string, { filename?: string; exportedName?: string }> };

/** The id `next build` gave the action `exportedName` of `filename` (e.g. "app/(dashboard)/exports/actions.ts"). */
export async function serverActionId(filename: string, exportedName: string): Promise<string> {
  const manifestFile = path.resolve(".next/server/server-reference-manifest.json");
  const manifest = JSON.parse(await fs.readFile(manifestFile, "utf8")) as Manifest;
  const found = Object.entries(manifest.node).find(
    ([, entry]) => entry.filename === filename && entry.exportedName === exportedName,
  );
  if (!found) throw new Error(`No server action ${exportedName} of ${filename} in ${manifestFile}.`);
  return found[0];
}

/** A session of `buyerId` (as a sign-in makes), as the cookie a browser would send. */
export async function sessionCookie(buyerId: string): Promise<string> {
  const sessionToken = randomBytes(32).toString("hex");
  await db().session.create({
    data: { sessionToken, userId: buyerId, expires: new Date(Date.now() + 24 * 60 * 60 * 1000) },
  });
  return `next-auth.session-token=${sessionToken}`;
}

export async function callServerAction<Result = Record<string, unknown>>(
  server: TestServer,
  {
    page,
    actionId,
    cookie,
    input,
    args = [input],
  }: {
    page: string;
    actionId: string;
    cookie: string;
    input?: unknown;
    /** Every argument, for an action of several (a bound action's bound ones first). Default: `[input]`. */
    args?: unknown[];
  },
): Promise<Result> {
  const response = await fetch(`${server.url}${page}`, {
    method: "POST",
    headers: {
      "Next-Action": actionId,
      Origin: server.url,
      Accept: "text/x-component",
      "Content-Type": "text/plain;charset=UTF-8",
      Cookie: cookie,
    },
    body: JSON.stringify(args),
  });
  const body = await response.text();
  if (!response.ok) throw new Error(`The action answered ${response.status}: ${body.slice(0, 500)}`);
  // The answer is React's flight format, one `<id>:<JSON>` row a line; row 0 names the row of the result ("a":"$@1").
  const rows = new Map(
    body
      .split("\n")
      .map((line) => /^([0-9a-f]+):(.*)$/.exec(line))
      .filter((match) => match !== null)
      .map((match) => [match[1]!, match[2]!]),
  );
  const root = JSON.parse(rows.get("0") ?? "{}") as { a?: string };
  const resultRow = root.a?.startsWith("$@") ? rows.get(root.a.slice(2)) : undefined;
  if (resultRow === undefined) throw new Error(`No action result in the answer: ${body.slice(0, 500)}`);
  return JSON.parse(resultRow) as Result;
}
