import { describe, expect, it } from "vitest";
import { apiDocument } from "../api/routes";
import { API_ROUTES } from "../api/routes";
import { orderPageSchema, orderSchema, socialProfileSchema } from "../schemas/api";
import { endpointViews, exampleOf, objectViews, typeLabel, type OpenApiDocument } from "./reference";

const document = apiDocument("https://example.test/api/v1") as unknown as OpenApiDocument;
const schemas = document.components!.schemas!;

describe("the API reference's view of the OpenAPI document", () => {
  it("names types as a reader reads them, with the object to link to", () => {
    expect(typeLabel({ type: ["integer", "null"] })).toEqual({ text: "integer or null" });
    expect(typeLabel({ type: "array", items: { $ref: "#/components/schemas/File" } })).toEqual({
      text: "array of File",
      ref: "File",
    });
    expect(typeLabel({ type: "string", format: "date-time" })).toEqual({ text: "string (date-time)" });
    expect(typeLabel({ type: "string", enum: ["a", "b"] })).toEqual({ text: 'one of "a", "b"' });
    expect(typeLabel({ type: "object", additionalProperties: {} })).toEqual({ text: "object (free-form)" });
  });

  it("lists every field of every object the API returns, required ones marked", () => {
    const order = objectViews(document).find(({ name }) => name === "Order")!;
    expect(order.fields.map(({ name }) => name)).toEqual(Object.keys(orderSchema.shape));
    expect(order.fields.find(({ name }) => name === "delivered_at")).toMatchObject({
      required: true,
      type: { text: "string (date-time) or null" },
    });
    expect(order.fields.find(({ name }) => name === "files")!.type).toEqual({ text: "array of File", ref: "File" });
  });

  it("gives each endpoint its success body and its error statuses", () => {
    const endpoints = endpointViews(document);
    // In the route table's order (lib/api/routes.ts).
    expect(endpoints.map(({ id }) => id)).toEqual(
      API_ROUTES.filter((entry) => !entry.undocumented).map((entry) => entry.operationId),
    );
    expect(endpoints.slice(0, 3).map(({ id }) => id)).toEqual(["listOrders", "getOrder", "downloadFile"]);
    const list = endpoints[0]!;
    expect(list.success).toEqual([
      expect.objectContaining({
        status: "200",
        contentType: "application/json",
        body: { text: "OrderPage", ref: "OrderPage" },
      }),
    ]);
    expect(list.errors.map(({ status }) => status)).toEqual(["400", "401", "403", "429", "503"]);
    expect(list.parameters.map(({ name, required }) => [name, required])).toEqual([
      ["limit", false],
      ["offset", false],
    ]);
    // The download: 302 to the bytes, or 202 (a problem body, rendition_pending) while a ?format= is made.
    expect(endpoints[2]!.success.map(({ status, body }) => [status, body])).toEqual([
      ["202", { text: "Problem", ref: "Problem" }],
      ["302", undefined],
    ]);
  });

  it("builds examples that the response schemas accept", () => {
    expect(orderPageSchema.safeParse(exampleOf(document, schemas.OrderPage)).error).toBeUndefined();
    expect(orderSchema.safeParse(exampleOf(document, schemas.Order)).error).toBeUndefined();
    expect(socialProfileSchema.safeParse(exampleOf(document, schemas.SocialProfile)).error).toBeUndefined();
  });
});
