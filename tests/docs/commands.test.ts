import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  clientSyncCommands,
  DEVELOPMENT_ORIGIN,
  downloadFileCommand,
  downloadFormatCommand,
  exportKeyCommand,
  listOrdersCommand,
  mcpCallCommand,
  readOrderCommand,
  RETRY_ON_202_NOTE,
  SETUP_COMMANDS,
  sharingQueryCommand,
  sharingTablesCommand,
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
    ["docs/delta-sharing.md", [sharingTablesCommand(DEVELOPMENT_ORIGIN), sharingQueryCommand(DEVELOPMENT_ORIGIN)]],
    ["docs/mcp.md", [mcpCallCommand(DEVELOPMENT_ORIGIN)]],
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

/** Every file under `dir` (recursively) whose name ends with one of `extensions`. */
function filesUnder(dir: string, extensions: string[]): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((name) => extensions.some((extension) => name.endsWith(extension)))
    .map((name) => path.join(dir, name));
}

/** The lines of the fenced code blocks of a Markdown file. */
function codeLines(markdown: string): string[] {
  let inBlock = false;
  return markdown.split("\n").filter((line) => {
    if (line.startsWith("```")) return void (inBlock = !inBlock);
    return inBlock;
  });
}

// Issue #39: `curl -L -OJ` saved an error's (or a 202's) JSON as the file and exited 0.
describe("every curl example fails on an error answer and says what a 202 means", () => {
  // A command, not the word: curl followed by an option, a variable or a URL.
  const curlWithoutFail = /(^|[\s`"'(|;&])curl (?!--fail\b)(-|\$|"|https?:)/;
  const markdown = ["README.md", ...filesUnder("docs", [".md"])];
  const pages = [...filesUnder("app", [".tsx", ".ts"]), ...filesUnder("components", [".tsx"]), "lib/docs/commands.ts"];

  it.each(markdown)("%s: every curl in a code block uses --fail", (file) => {
    const offending = codeLines(read(file)).filter((line) => curlWithoutFail.test(line));
    expect(offending).toEqual([]);
  });

  it("the pages' curl commands use --fail", () => {
    const offending = pages.flatMap((file) =>
      read(file)
        .split("\n")
        .filter((line) => curlWithoutFail.test(line) && !/^\s*(\/\/|\*|\/\*)/.test(line))
        .map((line) => `${file}: ${line.trim()}`),
    );
    expect(offending).toEqual([]);
  });

  it("a format download is followed by the note on 202", () => {
    expect(downloadFormatCommand(DEVELOPMENT_ORIGIN)).toMatch(/--fail -L -OJ[\s\S]*\?format=parquet"\n# 202/);
    for (const file of [...pages, ...markdown]) {
      const lines = read(file).split("\n");
      lines.forEach((line, index) => {
        if (/curl\b.*|CURL/.test(line) && /[?&]format=/.test(`${line}${lines[index + 1] ?? ""}`)) {
          const near = lines.slice(index, index + 4).join("\n");
          expect(near.includes("RETRY_ON_202_NOTE") || near.includes(RETRY_ON_202_NOTE), `${file}:${index + 1}`).toBe(
            true,
          );
        }
      });
    }
  });
});
