import { describe, expect, it } from "vitest";
import { AppError } from "../errors";
import { compileRouteTable, templateNames, templatePattern } from "./route-table";
import { API_ROUTES } from "../api/routes";

describe("the route table's matcher", () => {
  const match = compileRouteTable("/api/v1", [
    { path: "/orders", name: "list" },
    { path: "/orders/{id}", name: "one" },
    { path: "/orders/{id}/files/{fileId}", name: "file" },
    { path: "/openapi.json", name: "document" },
  ]);

  it("matches whole paths and decodes their parameters", () => {
    expect(match("/api/v1/orders")).toEqual({ route: expect.objectContaining({ name: "list" }), params: {} });
    expect(match("/api/v1/orders/ord_1/files/a%20b")?.params).toEqual({ id: "ord_1", fileId: "a b" });
    expect(match("/api/v1/openapi.json")?.route.name).toBe("document");
    for (const path of ["/api/v1/orders/", "/api/v1/orders//files/x", "/api/v1/openapiXjson", "/api/v1", "/orders"]) {
      expect(match(path), path).toBeUndefined();
    }
  });

  it("refuses a segment that does not decode as a 400", () => {
    expect(() => match("/api/v1/orders/%zz")).toThrow(AppError);
  });

  it("refuses two routes of the same shape", () => {
    expect(() => compileRouteTable("", [{ path: "/a/{x}" }, { path: "/a/{y}" }])).toThrow(/share the path/);
  });

  it("reads names and patterns from templates", () => {
    expect(templateNames("/orders/{id}/tables/{name}")).toEqual(["id", "name"]);
    expect(templatePattern("/a.b/{c}").source).toBe("^\\/a\\.b\\/([^/]+)$");
  });
});

describe("the /api/v1 route table", () => {
  it("declares for each path parameter a schema, and nothing else", () => {
    for (const entry of API_ROUTES) {
      expect(Object.keys(entry.params?.shape ?? {}).sort(), entry.path).toEqual(templateNames(entry.path).sort());
    }
  });

  it("names each operation once", () => {
    const ids = API_ROUTES.map((entry) => entry.operationId);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
