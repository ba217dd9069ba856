import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { DEVELOPMENT_ORIGIN } from "@/lib/docs/commands";
import { mcpClientConfig } from "@/lib/docs/mcp-config";

/** docs/mcp.md shows the MCP client configuration the Getting started page renders, verbatim, for the development server. */
describe("the MCP client configuration", () => {
  it("in docs/mcp.md is the Getting started page's", () => {
    expect(readFileSync("docs/mcp.md", "utf8")).toContain(mcpClientConfig(DEVELOPMENT_ORIGIN));
  });

  it("names the site's endpoint and the Authorization header", () => {
    const config = mcpClientConfig("https://data.example.com");
    expect(config).toContain('"url": "https://data.example.com/api/mcp"');
    expect(config).toContain('"Authorization": "Bearer ${input:dataset-access-key}"');
  });
});
