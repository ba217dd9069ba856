import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { createShareLink, listShareLinks, revokeShareLink, shareLinkLabelSchema } from "../../lib/share-links";
import { createTestEnvironment } from "../helpers/database";
import { buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startServer, type TestServer } from "../helpers/server";

let env: TestEnvironment;
let server: TestServer;
beforeAll(async () => {
  env = await createTestEnvironment("share_links");
  server = await startServer({ databaseUrl: env.database.url, storageDir: env.storageDir });
});
afterAll(async () => {
  await server?.stop();
  await env?.cleanup();
});

const page = async (path: string) => {
  const response = await fetch(`${server.url}${path}`, { redirect: "manual" });
  return { status: response.status, location: response.headers.get("location"), html: await response.text() };
};
/** The page's visible text, roughly: each tag a space, React's comment markers dropped, spacing folded. */
const text = (html: string) =>
  html
    .replace(/<script[\s\S]*?<\/script>/g, "")
    .replace(/<!--.*?-->/g, "")
    .replace(/<[^>]+>/g, " ")
    .replace(/\s+/g, " ");

describe("share links", () => {
  it("keep a label of at most 100 characters, blank meaning none", () => {
    expect(shareLinkLabelSchema.parse("  for Acme finance ")).toBe("for Acme finance");
    expect(shareLinkLabelSchema.parse("   ")).toBeNull();
    expect(shareLinkLabelSchema.safeParse("x".repeat(100)).success).toBe(true);
    expect(shareLinkLabelSchema.safeParse("x".repeat(101)).error?.issues[0]?.message).toBe(
      "A label has at most 100 characters.",
    );
    expect(shareLinkLabelSchema.safeParse("for\u0000Acme").error?.issues[0]?.message).toBe(
      "A label cannot contain control characters.",
    );
  });

  it("tell the recipient who shared the order and until when, without asking them to sign in", async () => {
    const owner = await buyer("share-page");
    await db().user.update({ where: { id: owner.id }, data: { name: "Ada at Acme" } });
    const shared = await order(owner.id, { name: "Prices", files: { "a.txt": Buffer.from("a\n") } });
    const now = new Date();
    const link = await createShareLink({ buyerId: owner.id, orderId: shared.id, expiry: 7, label: "for Acme", now });
    const { status, html } = await page(`/share/${link.token}`);
    expect(status).toBe(200);
    const shown = text(html);
    expect(shown).toContain("Shared with you by Ada at Acme .");
    expect(shown).toContain(
      `This link works until ${link.expiresAt!.toISOString().slice(0, 16).replace("T", " ")} UTC.`,
    );
    expect(shown).not.toMatch(/Sign in/);
    // Without a name the sharer is their e-mail address; a link that never expires says so.
    const other = await buyer("share-page-email");
    const otherOrder = await order(other.id, { name: "Reviews" });
    const forever = await createShareLink({ buyerId: other.id, orderId: otherOrder.id, expiry: "never" });
    const foreverText = text((await page(`/share/${forever.token}`)).html);
    expect(foreverText).toContain(`Shared with you by ${other.email} .`);
    expect(foreverText).toContain("This link works until they revoke it.");
  });

  it("count opens and handed-out downloads for the owner's list", async () => {
    const owner = await buyer("share-counts");
    const shared = await order(owner.id, { files: { "a.txt": Buffer.from("a\n") } });
    const link = await createShareLink({ buyerId: owner.id, orderId: shared.id, expiry: 30, label: "for Bob" });
    const before = await listShareLinks(owner.id, shared.id);
    expect(before[0]).toMatchObject({ label: "for Bob", openCount: 0, lastOpenedAt: null, downloadCount: 0 });

    for (let i = 0; i < 2; i++) expect((await page(`/share/${link.token}`)).status).toBe(200);
    const download = await page(`/share/${link.token}/files/${shared.files[0]!.id}`);
    expect(download.status).toBe(302);
    // A file that is not in the order is not a download.
    expect((await page(`/share/${link.token}/files/fil_${"0".repeat(32)}`)).status).toBe(404);

    const [after] = await listShareLinks(owner.id, shared.id);
    expect(after).toMatchObject({ openCount: 2, downloadCount: 1 });
    expect(Date.now() - after!.lastOpenedAt!.getTime()).toBeLessThan(60_000);
  });

  it.each(["revoked", "expired"] as const)(
    "send a download from a %s link to a page that says so and since when",
    async (state) => {
      const owner = await buyer(`share-${state}`);
      const shared = await order(owner.id, { files: { "a.txt": Buffer.from("a\n") } });
      const link = await createShareLink({ buyerId: owner.id, orderId: shared.id, expiry: 1 });
      const since = new Date(Date.now() - 60_000);
      if (state === "revoked") await revokeShareLink(owner.id, link.id, since);
      else await db().shareLink.update({ where: { id: link.id }, data: { expiresAt: since } });

      const download = await page(`/share/${link.token}/files/${shared.files[0]!.id}`);
      expect(download.status).toBe(303);
      expect(new URL(download.location!).pathname).toBe(`/share/${link.token}`);
      const landing = text((await page(`/share/${link.token}`)).html);
      expect(landing).toContain("This share link does not work");
      const when = `${since.toISOString().slice(0, 16).replace("T", " ")} UTC`;
      expect(landing).toContain(state === "revoked" ? `It was revoked on ${when}.` : `It expired on ${when}.`);
      expect(landing).not.toMatch(/Sign in/);
      const [row] = await listShareLinks(owner.id, shared.id);
      expect(row).toMatchObject({ openCount: 0, downloadCount: 0 });
    },
  );

  it("say only that an unknown link does not work", async () => {
    const landing = text((await page(`/share/dsl_${"A".repeat(43)}`)).html);
    expect(landing).toContain("This share link does not work");
    expect(landing).toContain("It was not copied whole, or it never existed.");
  });
});
