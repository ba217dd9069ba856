import { describe, expect, it } from "vitest";
import { redactingLines, redactSecrets } from "./log-redaction";

const SECRET = `dak_${"a1B2".repeat(9)}xy`;

describe("redactSecrets", () => {
  it.each([
    [` GET /api/v1/orders?api_key=${SECRET} 401 in 12ms`, " GET /api/v1/orders?api_key=[redacted] 401 in 12ms"],
    [`GET /api/v1/orders?limit=5&api_key=${SECRET}&offset=0`, "GET /api/v1/orders?limit=5&api_key=[redacted]&offset=0"],
    [`GET /x?API_KEY=not-even-a-key 400`, "GET /x?API_KEY=[redacted] 400"],
    [`GET /x?token=${SECRET}`, "GET /x?token=dak_[redacted]"],
    ["GET /api/v1/orders?limit=5 200", "GET /api/v1/orders?limit=5 200"],
  ])("%s", (line, redacted) => {
    expect(redactSecrets(line)).toBe(redacted);
  });
});

describe("redactingLines", () => {
  it("redacts a secret split across chunks, and a last line without its newline", async () => {
    const stream = redactingLines();
    const out: string[] = [];
    stream.on("data", (chunk: Buffer) => out.push(chunk.toString()));
    const line = `GET /api/v1/orders?api_key=${SECRET} 401\n`;
    stream.write(line.slice(0, 30));
    stream.write(line.slice(30));
    stream.end(`tail ${SECRET}`);
    await new Promise((resolve) => stream.on("end", resolve));
    expect(out.join("")).toBe("GET /api/v1/orders?api_key=[redacted] 401\ntail dak_[redacted]");
  });
});
