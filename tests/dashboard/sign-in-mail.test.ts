import PostalMime from "postal-mime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestEnvironment } from "../helpers/database";
import { buyer, type TestEnvironment } from "../helpers/fixtures";
import { startServer } from "../helpers/server";
import { requestSignIn } from "../helpers/sign-in";
import { startSilentServer, startSmtpServer, type ReceivedMail } from "../helpers/smtp";

let env: TestEnvironment;
beforeAll(async () => {
  env = await createTestEnvironment("dashboard_signin_mail");
});
afterAll(async () => {
  await env?.cleanup();
});

/** A production server sending its sign-in e-mails to `mailServerUrl`; `run` gets it, then it stops. */
async function withServer(
  mailServerUrl: string,
  run: (server: Awaited<ReturnType<typeof startServer>>) => Promise<void>,
) {
  const server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    withAppUrl: true,
    env: { EMAIL_SERVER: mailServerUrl, REDIS_URL: "" },
  });
  try {
    await run(server);
  } finally {
    await server.stop();
  }
}

/** What a client sees of an answer to a sign-in request: status and body. */
async function answer(server: Awaited<ReturnType<typeof startServer>>, email: string) {
  const response = await requestSignIn(server, email);
  return { status: response.status, url: response.url.toString() };
}

describe("sign-in e-mails leave off the request path", () => {
  it.each([
    {
      kind: "hangs",
      // Its greeting awaited 1 s rather than the default 10 (EMAIL_SERVER's query sets it, lib/auth/mail.ts).
      start: async () => {
        const silent = await startSilentServer();
        return { ...silent, url: `${silent.url}?greetingTimeout=1000` };
      },
      failure: /Sign-in e-mail to \S+ not sent: .*(timeout|Greeting never received)/i,
    },
    {
      kind: "refuses every recipient",
      start: () => startSmtpServer({ refuseRecipients: true }),
      failure: /Sign-in e-mail to \S+ not sent: .*550/,
    },
  ])("while the mail server $kind, a buyer and a stranger get the same answer", async ({ start, failure }) => {
    const mailServer = await start();
    try {
      await withServer(mailServer.url, async (server) => {
        const { email } = await buyer("mail-fails");
        const buyerAnswer = await answer(server, email);
        const strangerAnswer = await answer(server, `stranger-${Date.now()}@example.com`);
        expect(buyerAnswer).toEqual(strangerAnswer);
        expect(new URL(buyerAnswer.url).pathname).toBe("/api/auth/verify-request");
        // The failure is logged, without the link.
        await expect.poll(() => server.output(), { timeout: 30_000 }).toMatch(failure);
        expect(await server.loggedSoFar()).not.toMatch(/signin\/confirm|callback\/email|token=/);
      });
    } finally {
      await mailServer.close();
    }
  });

  it("a buyer's e-mail arrives, with the link; a stranger's request sends nothing", async () => {
    const received: ReceivedMail[] = [];
    const mailServer = await startSmtpServer({ onMessage: (mail) => void received.push(mail) });
    try {
      await withServer(mailServer.url, async (server) => {
        const stranger = `stranger-${Date.now()}@example.com`;
        const { email } = await buyer("mail-works");
        expect(await answer(server, stranger)).toEqual(await answer(server, email));
        await expect.poll(() => received.length, { timeout: 30_000 }).toBe(1);
        expect(received[0]!.to).toEqual([email]);
        const text = (await PostalMime.parse(received[0]!.raw)).text ?? "";
        expect(text).toMatch(new RegExp(`${server.url}/signin/confirm\\?\\S*token=`));
        expect(await server.loggedSoFar()).not.toMatch(/signin\/confirm|callback\/email|token=/);
      });
    } finally {
      await mailServer.close();
    }
  });
});
