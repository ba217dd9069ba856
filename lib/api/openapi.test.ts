import { describe, expect, it } from "vitest";
import { API_ERRORS } from "../http/problem";
import { apiDocument } from "./routes";
import { API_PATHS, API_ROUTES } from "./routes";

describe("the OpenAPI document", () => {
  it("lists exactly the route table's documented paths, with each entry's operation and parameters", () => {
    const document = apiDocument("https://example.test/api/v1");
    expect(Object.keys(document.paths ?? {}).sort()).toEqual([...API_PATHS].sort());
    for (const entry of API_ROUTES.filter((route) => !route.undocumented)) {
      const operation = document.paths![entry.path]!.get!;
      expect(operation.operationId).toBe(entry.operationId);
      const inPath = (operation.parameters ?? [])
        .map((parameter) => parameter as { in: string; name: string })
        .filter((parameter) => parameter.in === "path")
        .map((parameter) => parameter.name);
      expect(inPath.sort(), entry.path).toEqual(Object.keys(entry.params?.shape ?? {}).sort());
    }
  });

  it("answers each error code with the status of the one error table", () => {
    const document = apiDocument("https://example.test/api/v1");
    for (const operations of Object.values(document.paths ?? {})) {
      for (const operation of Object.values(
        operations as Record<string, { responses: Record<string, { description: string }> }>,
      )) {
        for (const [status, response] of Object.entries(operation.responses)) {
          for (const [, code] of response.description.matchAll(/`([a-z_]+)`/g)) {
            expect(API_ERRORS[code as keyof typeof API_ERRORS]?.status, code).toBe(Number(status));
          }
        }
      }
    }
  });
});
