import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDestination } from "../../lib/exports/destinations";
import { OPERATOR } from "../../lib/security/log";
import { createTestEnvironment } from "../helpers/database";
import { buyer, type TestEnvironment } from "../helpers/fixtures";

/**
 * A destination refused for one of its settings names that setting (`field`, the dashboard form's
 * field name), so the form can show the refusal by it; one about no single setting names none.
 */
let env: TestEnvironment;

beforeAll(async () => {
  env = await createTestEnvironment("export_setting_errors");
});

afterAll(async () => {
  await env?.cleanup();
});

const S3 = { bucket: "acme-lake", region: "us-east-1", access_key_id: "AKIA", secret_access_key: "s3cret" };
const valid = {
  name: "Data lake",
  type: "s3" as const,
  fields: S3 as Record<string, string | boolean | number>,
  orders: "all" as const,
  format: "original" as const,
};

describe("a refused destination names the setting", () => {
  it.each([
    ["name", { ...valid, name: "" }, /^The name is required/],
    ["bucket", { ...valid, fields: { ...S3, bucket: "No" } }, /^The bucket name is not valid/],
    ["region", { ...valid, fields: { ...S3, region: "US East" } }, /^The region is not valid/],
    ["secret", { ...valid, fields: { bucket: "acme-lake", region: "us-east-1", access_key_id: "AKIA" } }, /^Give the/],
    ["orders", { ...valid, orders: ["ord_x"] }, /^An order id looks like/],
    ["orders", { ...valid, orders: [`ord_${"0".repeat(32)}`] }, /not an order of this account/],
    ["template", { ...valid, template: "{order_id}/static" }, /./],
  ])("%s", async (field, input, message) => {
    const account = await buyer(`setting-${field}`);
    await expect(createDestination(account.id, input, OPERATOR)).rejects.toMatchObject({
      code: "invalid_argument",
      field,
      message: expect.stringMatching(message),
    });
  });

  it("names none for a setting the form has no field for", async () => {
    const account = await buyer("setting-unknown");
    const refused = await createDestination(
      account.id,
      { ...valid, fields: { ...S3, colour: "blue" } },
      OPERATOR,
    ).catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: "invalid_argument", message: expect.stringMatching(/is not a setting/) });
    expect((refused as { field?: string }).field).toBeUndefined();
  });
});
