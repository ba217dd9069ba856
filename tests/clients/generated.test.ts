import { promises as fs } from "node:fs";
import { expect, it } from "vitest";
import { GENERATED_TYPES, generatedTypes } from "../../scripts/clients/generate-types";

it("the TypeScript client's types are those of the current OpenAPI document (else: npm run client:generate)", async () => {
  expect(await fs.readFile(GENERATED_TYPES, "utf8")).toBe(await generatedTypes());
});
