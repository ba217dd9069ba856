import { DOWNLOAD_LINK_TTL_SECONDS } from "../contract";
import { db } from "../db/client";
import { filePreview } from "../datasets/access";
import { orderJson, orderPageJson } from "../orders/queries";
import type { ExampleIds } from "./commands";
import type { OpenApiDocument } from "./reference";
import { exampleOf } from "./reference";
import { demoTableExamples, schemaTableExamples, type TableExamples } from "./table-examples";

/** The demo buyer `npm run seed` loads (scripts/seed-demo.ts). */
export const DEMO_EMAIL = "demo@example.com";

/** One example exchange per endpoint: the path to call and, where there is one, the JSON body it answers. */
export type ApiExamples = {
  /** "demo": real ids and bodies of the demo account, so the examples work with a key of it. */
  source: "demo" | "schema";
  /** The order and file the examples use, for pages that show commands (the getting-started page). */
  ids: ExampleIds;
  listOrders: { path: string; body: string };
  getOrder: { path: string; body: string };
  downloadFile: { path: string; fileName: string };
  previewFile: { path: string; body: string };
  getSocialProfile: { path: string; body: string };
  /** The table endpoints': versions, quality, changes, rows, subsets, SQL. */
  tables: TableExamples;
};

/** Rows the preview example asks for: enough to see the data, short enough to read. */
const PREVIEW_EXAMPLE_ROWS = 3;

const pretty = (json: string | unknown) => JSON.stringify(typeof json === "string" ? JSON.parse(json) : json, null, 2);

/**
 * Examples for the API reference. Where the demo data is loaded they are the demo account's own
 * answers (the same functions the API answers with, read-only: nothing is counted or used up);
 * elsewhere they are built from the schemas' examples.
 */
export async function apiExamples(document: OpenApiDocument): Promise<ApiExamples> {
  return (await demoExamples(document).catch(() => undefined)) ?? schemaExamples(document);
}

async function demoExamples(document: OpenApiDocument): Promise<ApiExamples | undefined> {
  const buyer = await db().user.findUnique({ where: { email: DEMO_EMAIL }, select: { id: true } });
  if (!buyer) return undefined;
  const delivered = await db().order.findFirst({
    where: { buyerId: buyer.id, status: "delivered", files: { some: { origin: "delivered" } } },
    orderBy: [{ paidAt: "desc" }, { id: "desc" }],
    select: {
      id: true,
      // A delivered file, never a change file: those are downloaded through their version, not listed as files.
      files: {
        where: { origin: "delivered" },
        orderBy: [{ createdAt: "asc" }, { id: "asc" }],
        take: 1,
        select: { id: true, name: true },
      },
    },
  });
  const profile = await db().socialProfile.findFirst({
    orderBy: [{ platform: "asc" }, { handle: "asc" }],
    select: { platform: true, handle: true, profile: true, fetchedAt: true },
  });
  if (!delivered || !profile) return undefined;
  const file = delivered.files[0]!;
  return {
    source: "demo",
    ids: { orderId: delivered.id, fileId: file.id },
    listOrders: { path: "/orders?limit=2", body: pretty(await orderPageJson(buyer.id, { limit: 2, offset: 0 })) },
    getOrder: { path: `/orders/${delivered.id}`, body: pretty(await orderJson(buyer.id, delivered.id)) },
    downloadFile: { path: `/orders/${delivered.id}/files/${file.id}`, fileName: file.name },
    previewFile: {
      path: `/orders/${delivered.id}/files/${file.id}/preview?limit=${PREVIEW_EXAMPLE_ROWS}`,
      body: pretty(await filePreview(buyer.id, delivered.id, file.id, PREVIEW_EXAMPLE_ROWS)),
    },
    getSocialProfile: {
      path: `/scrape/${profile.platform}/profile?handle=${encodeURIComponent(profile.handle)}`,
      body: pretty({
        platform: profile.platform,
        handle: profile.handle,
        profile: profile.profile,
        fetched_at: profile.fetchedAt.toISOString(),
      }),
    },
    tables:
      (await demoTableExamples(buyer.id, delivered.id, apiOrigin(document))) ??
      schemaTableExamples(document, delivered.id),
  };
}

/** The site's origin, from the document's server (`<origin>/api/v1`). */
const apiOrigin = (document: OpenApiDocument) => (document.servers?.[0]?.url ?? "").replace(/\/api\/v1$/, "");

function schemaExamples(document: OpenApiDocument): ApiExamples {
  const schemas = document.components?.schemas ?? {};
  const order = exampleOf(document, schemas.Order) as { id: string; files: { id: string; name: string }[] };
  const profile = exampleOf(document, schemas.SocialProfile) as { platform: string; handle: string };
  return {
    source: "schema",
    ids: { orderId: order.id, fileId: order.files[0]!.id },
    listOrders: { path: "/orders?limit=2", body: pretty(exampleOf(document, schemas.OrderPage)) },
    getOrder: { path: `/orders/${order.id}`, body: pretty(order) },
    downloadFile: { path: `/orders/${order.id}/files/${order.files[0]!.id}`, fileName: order.files[0]!.name },
    previewFile: {
      path: `/orders/${order.id}/files/${order.files[0]!.id}/preview?limit=${PREVIEW_EXAMPLE_ROWS}`,
      body: pretty(exampleOf(document, schemas.Preview)),
    },
    getSocialProfile: {
      path: `/scrape/${profile.platform}/profile?handle=${profile.handle}`,
      body: pretty(exampleOf(document, schemas.SocialProfile)),
    },
    tables: schemaTableExamples(document, order.id),
  };
}

/** The Location a download answers with, as the reference shows it (the token is made up). */
export const exampleSignedLink = (origin: string) =>
  `${origin}/api/dl/<signed token, valid ${DOWNLOAD_LINK_TTL_SECONDS / 60} minutes>`;
