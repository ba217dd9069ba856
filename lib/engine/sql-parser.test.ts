import { describe, expect, it } from "vitest";
import { serializedSql } from "./sql-parser";

type Parse = { error: boolean; error_message?: string; statements?: { node: { where_clause?: unknown } }[] };
const parse = async (sql: string) => JSON.parse(await serializedSql(sql)) as Parse;

describe("the engine process's parser", () => {
  it("answers each of many texts parsed at once with that text's parse", async () => {
    const texts = Array.from({ length: 40 }, (_, index) => `SELECT * FROM t WHERE id = ${index}`);
    const parses = await Promise.all(texts.map(parse));
    parses.forEach((parsed, index) => {
      expect(JSON.stringify(parsed.statements![0]!.node.where_clause)).toContain(`"value":${index}`);
    });
  });

  it("says what does not parse, and parses the next text as before", async () => {
    const failed = await parse("SELECT * FROM t WHERE (");
    expect(failed.error).toBe(true);
    expect(failed.error_message).toMatch(/syntax error/i);
    expect((await parse("SELECT 1")).error).toBe(false);
  });

  it("runs nothing of the text: a setting or a file read is parsed, never done", async () => {
    const parsed = await parse("SELECT * FROM read_text('/etc/passwd')");
    expect(JSON.stringify(parsed)).not.toContain("root:");
    // Not a SELECT: json_serialize_sql refuses it instead of parsing it.
    expect((await parse("SET threads = 64")).error).toBe(true);
  });
});
