/**
 * The commands the README, docs/ and the getting-started page show, written once. The page renders them with the
 * site's own origin; README.md and docs/ show them with the development server's, and tests/docs/commands.test.ts
 * fails when they stop carrying them verbatim. Dependency-free, so tests and pages alike may import it.
 */

/** Where `npm run dev` serves the app: the origin the README's and the docs' examples use. */
export const DEVELOPMENT_ORIGIN = "http://localhost:3000";

/**
 * Set-up on a fresh machine. `.ci/run` runs the test command the README gives, so these two are the project's
 * front door: change them only together with the README, docs/development.md and docs/operations.md.
 */
export const SETUP_COMMANDS = {
  /** Starts the app on the embedded PostgreSQL with the demo data. */
  start: "npm install && npm run dev",
  /** Runs the tests (they start their own embedded PostgreSQL). */
  test: "npm test",
} as const;

/** The environment variable the clients (and the curl examples) read the API key from. */
export const KEY_VARIABLE = "DATASET_ACCESS_KEY";

/** Step 1: the key, from wherever the integration keeps its secrets. */
export const exportKeyCommand = `export ${KEY_VARIABLE}=dak_...   # the secret, from your secret store`;

const bearer = `-H "Authorization: Bearer $${KEY_VARIABLE}"`;

/**
 * Every curl example starts so: --fail makes an error answer (4xx, 5xx) exit non-zero instead of landing in the
 * output or in a file named after the URL.
 */
export const CURL = "curl --fail";

/**
 * A format download (or a change file) answers 202 while it is made, which curl --fail cannot tell from the file: it
 * saves the small JSON answer under the URL's name and exits 0. Shown beside every such example.
 */
export const RETRY_ON_202_NOTE =
  "# 202 = still being made: curl saved that JSON answer, not the data. Run it again after Retry-After seconds.";

/** The ids an example shows: the reader's own where the page knows them, else placeholders. */
export type ExampleIds = { orderId: string; fileId: string };
export const PLACEHOLDER_IDS: ExampleIds = { orderId: "ord_...", fileId: "fil_..." };

/** The first page of orders, newest first. */
export function listOrdersCommand(origin: string): string {
  return `${CURL} ${bearer} \\\n  "${origin}/api/v1/orders?limit=50&offset=0"`;
}

/** One order, with its files. */
export function readOrderCommand(origin: string, { orderId } = PLACEHOLDER_IDS): string {
  return `${CURL} ${bearer} \\\n  ${origin}/api/v1/orders/${orderId}`;
}

/** One file: the API redirects to a signed link, so curl follows it (-L) and keeps the server's name (-OJ). */
export function downloadFileCommand(origin: string, { orderId, fileId } = PLACEHOLDER_IDS): string {
  return `${CURL} -L -OJ ${bearer} \\\n  ${origin}/api/v1/orders/${orderId}/files/${fileId}`;
}

/** The same file in another format, with what a 202 means. */
export function downloadFormatCommand(
  origin: string,
  { orderId, fileId } = PLACEHOLDER_IDS,
  format = "parquet",
): string {
  return `${CURL} -L -OJ ${bearer} \\\n  "${origin}/api/v1/orders/${orderId}/files/${fileId}?format=${format}"\n${RETRY_ON_202_NOTE}`;
}

/** Every delivered order into ./datasets with either client. */
export function clientSyncCommands(origin: string): string {
  return [
    `export DATASET_ACCESS_URL=${origin}`,
    `# Python 3.9+, nothing to install:`,
    `${CURL} -O ${origin}/clients/dataset_access.py`,
    `python3 dataset_access.py sync --dir ./datasets`,
    `# Node.js 20+: the client package from this site (never from a registry by name):`,
    `npm install ${origin}/clients/dataset-access-client.tgz`,
    `npx dataset-access sync --dir ./datasets`,
  ].join("\n");
}

/** What a Delta Sharing connector asks first: every table of every delivered order. */
export function sharingTablesCommand(origin: string): string {
  return `${CURL} ${bearer} \\\n  ${origin}/api/delta-sharing/shares/orders/all-tables`;
}

/** The parts of a table's current version, as a connector queries them (NDJSON with signed links). */
export function sharingQueryCommand(origin: string, { orderId } = PLACEHOLDER_IDS, table = "products"): string {
  return (
    `${CURL} -X POST ${bearer} -H "Content-Type: application/json" \\\n` +
    `  -d '{"limitHint": 100}' ${origin}/api/delta-sharing/shares/orders/schemas/${orderId}/tables/${table}/query`
  );
}

/** One MCP tool call by hand, as an agent sends it: a JSON-RPC POST. */
export function mcpCallCommand(origin: string): string {
  return [
    `${CURL} ${bearer} \\`,
    `  -H "Accept: application/json, text/event-stream" -H "Content-Type: application/json" \\`,
    `  -d '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_orders", "arguments": {}}}' \\`,
    `  ${origin}/api/mcp`,
  ].join("\n");
}
