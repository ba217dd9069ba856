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

/** The first page of orders, newest first. */
export function listOrdersCommand(origin: string): string {
  return `curl ${bearer} \\\n  "${origin}/api/v1/orders?limit=50&offset=0"`;
}

/** One order, with its files. */
export function readOrderCommand(origin: string): string {
  return `curl ${bearer} \\\n  ${origin}/api/v1/orders/ord_...`;
}

/** One file: the API redirects to a signed link, so curl follows it (-L) and keeps the server's name (-OJ). */
export function downloadFileCommand(origin: string): string {
  return `curl -L -OJ ${bearer} \\\n  ${origin}/api/v1/orders/ord_.../files/fil_...`;
}

/** Every delivered order into ./datasets with either client. */
export function clientSyncCommands(origin: string): string {
  return [
    `export DATASET_ACCESS_URL=${origin}`,
    `# Python 3.9+, nothing to install:`,
    `curl --fail -O ${origin}/clients/dataset_access.py`,
    `python3 dataset_access.py sync --dir ./datasets`,
    `# Node.js 20+: the client package from this site (never from a registry by name):`,
    `npm install ${origin}/clients/dataset-access-client.tgz`,
    `npx dataset-access sync --dir ./datasets`,
  ].join("\n");
}
