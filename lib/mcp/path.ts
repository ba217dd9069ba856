/** Where the MCP server is (Streamable HTTP, one endpoint): a leaf, so pages and docs name it without the SDK. */
export const MCP_PATH = "/api/mcp";
