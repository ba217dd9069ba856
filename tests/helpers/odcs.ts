import { promises as fs } from "node:fs";
import { Ajv2019 } from "ajv/dist/2019.js";
import addFormats from "ajv-formats";
import { expect } from "vitest";

/**
 * The official ODCS v3.1.0 JSON Schema, vendored in vendor/odcs, compiled with Ajv (draft 2019-09,
 * with formats): the check fails the test with every error Ajv finds.
 */
export async function odcsCheck(): Promise<(document: unknown) => void> {
  const validate = new Ajv2019({ allErrors: true, strict: false });
  addFormats.default(validate);
  const schema = JSON.parse(await fs.readFile("vendor/odcs/odcs-json-schema-v3.1.0.json", "utf8"));
  const compiled = validate.compile(schema);
  return (document) => {
    const valid = compiled(document);
    expect(valid, JSON.stringify(compiled.errors, null, 2)).toBe(true);
  };
}
