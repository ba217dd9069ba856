import { COMMANDS } from "./admin/commands";
import { runMain } from "./run-main";

/**
 * The operator CLI: `npm run admin -- <command> [--options] [--json]`.
 * Success prints a summary (or, with --json, one JSON object) on stdout and exits 0; any error
 * prints a clear message on stderr (and, with --json, `{"error": {...}}` on stdout) and exits 1.
 * `npm run admin` runs it built (scripts/cli-build.mjs); it runs from source too (`tsx scripts/admin.ts`).
 * This entry imports only the table of commands: a command's modules load when it runs (./admin/run.ts).
 */

function usage(): string {
  const lines = Object.entries(COMMANDS).map(([name, { usage }]) => `  ${name} ${usage}`);
  return `Usage: npm run admin -- <command> [options] [--json]\n\nCommands:\n${lines.join("\n")}`;
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === "help" || name === "--help") {
    console.error(usage());
    return name ? 0 : 1;
  }
  const definition = COMMANDS[name];
  if (!definition) {
    const message = `Unknown command "${name}".\n${usage()}`;
    if (rest.includes("--json")) console.log(JSON.stringify({ error: { code: "unknown_command", message } }));
    console.error(`error: ${message}`);
    return 1;
  }
  const { runCommand } = await import("./admin/run");
  return runCommand(name, definition, rest);
}

await runMain(() => main(process.argv.slice(2)));
