import { MCP_PATH } from "../mcp/path";

/**
 * How an MCP client connects to this site's MCP server, written once for the Getting started page
 * and docs/mcp.md (tests/docs/mcp-config.test.ts holds the doc to it): the URL and the header.
 */
export function mcpClientConfig(origin: string): string {
  const url = `${origin}${MCP_PATH}`;
  return [
    `# VS Code (.vscode/mcp.json); Cursor and Windsurf take the same "url" and "headers"`,
    JSON.stringify(
      {
        servers: {
          "dataset-access": {
            type: "http",
            url,
            headers: { Authorization: "Bearer ${input:dataset-access-key}" },
          },
        },
        inputs: [{ id: "dataset-access-key", type: "promptString", description: "Dataset Access key", password: true }],
      },
      null,
      2,
    ),
    `# Claude Code`,
    `claude mcp add --transport http dataset-access ${url} --header "Authorization: Bearer $DATASET_ACCESS_KEY"`,
    `# Claude Desktop (claude_desktop_config.json, through the mcp-remote bridge)`,
    JSON.stringify(
      {
        mcpServers: {
          "dataset-access": {
            command: "npx",
            args: ["mcp-remote", url, "--header", "Authorization:${DATASET_ACCESS_KEY}"],
            env: { DATASET_ACCESS_KEY: "Bearer dak_..." },
          },
        },
      },
      null,
      2,
    ),
    `# MCP Inspector: npx @modelcontextprotocol/inspector, transport Streamable HTTP, URL ${url},`,
    `# header Authorization: Bearer <key>`,
  ].join("\n");
}
