import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  clientSyncCommands,
  DEVELOPMENT_ORIGIN,
  downloadFileCommand,
  exportKeyCommand,
  listOrdersCommand,
  readOrderCommand,
  SETUP_COMMANDS,
} from "@/lib/docs/commands";

/**
 * The getting-started page renders lib/docs/commands.ts; README.md and docs/ carry the same commands as text (with
 * the development server's origin). Each case names the document and the commands it must show verbatim, so a
 * command edited in one place and not the other fails here.
 */
const apiCommands = [
  exportKeyCommand,
  listOrdersCommand(DEVELOPMENT_ORIGIN),
  readOrderCommand(DEVELOPMENT_ORIGIN),
  downloadFileCommand(DEVELOPMENT_ORIGIN),
];
const setupLines = [
  new RegExp(`^${escape(SETUP_COMMANDS.start)}\\s+#`, "m"),
  new RegExp(`^${escape(SETUP_COMMANDS.test)}\\s+#`, "m"),
];

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

const read = (file: string) => readFileSync(file, "utf8");

describe("the commands shown in the docs are the getting-started page's", () => {
  it.each([
    ["README.md", [...apiCommands, clientSyncCommands(DEVELOPMENT_ORIGIN)]],
    ["docs/api.md", apiCommands.slice(1)],
    ["docs/clients.md", [clientSyncCommands(DEVELOPMENT_ORIGIN)]],
  ])("%s shows the API and client commands", (file, commands) => {
    const text = read(file);
    for (const command of commands) expect(text, `${file} lacks:\n${command}`).toContain(command);
  });

  it.each(["README.md", "docs/development.md", "docs/operations.md"])("%s shows the two set-up commands", (file) => {
    const text = read(file);
    for (const line of setupLines) expect(text).toMatch(line);
  });

  it("CI runs the test command the README gives", () => {
    // The command itself, after any environment assignments (the database URLs CI sets).
    expect(read(".ci/run")).toMatch(new RegExp(`^(\\w+=\\S+\\s+)*${escape(SETUP_COMMANDS.test)}$`, "m"));
  });
});
