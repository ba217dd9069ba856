/**
 * The curl examples the documentation shows, as scripts a test can run against a server with the demo data loaded
 * (tests/docs/examples.test.ts). Pure text work, no I/O. The rule, also in docs/development.md#documented-examples:
 *
 * - An example is a fenced `sh`/`shell`/`bash` block of README.md or docs/*.md, or a code block of the
 *   /getting-started or /docs/api page, that calls `curl`. Of a block only the curl commands and the shell variables
 *   they use (`NAME=...`) run; comments, `export` lines (they stand for the reader's own key and address) and other
 *   programs (python3, npm, sha256sum) are not.
 * - Written for the development server and a reader's own ids, they run with `http://localhost:3000` replaced by the
 *   server's origin, `ord_...` by the demo's delivered order and `fil_...` by its first file, and with
 *   `DATASET_ACCESS_KEY` (a `datasets:read` key of the demo account) and `SOCIAL_KEY` (its `scrape:read` key) set.
 * - A block that cannot run against the demo says so on the line before its fence:
 *   `<!-- example: not run, <why> -->`.
 */

import { DEVELOPMENT_ORIGIN } from "@/lib/docs/commands";

export type DocExample = {
  /** `file:line` of the block, or the page and the block's number. */
  where: string;
  /** The commands that run, one per line (continuations joined). */
  commands: string[];
  /** Why the block does not run, when it is marked so. */
  notRun?: string;
};

export type DemoIds = { origin: string; orderId: string; fileId: string };

const SHELL_LANGUAGES = new Set(["sh", "shell", "bash"]);
const NOT_RUN = /^\s*<!--\s*example:\s*not run,\s*(.+?)\s*-->\s*$/;

/** The logical lines of a script: a line ending in `\`, `&&`, `||` or `|` continues on the next. */
function logicalLines(script: string): string[] {
  const lines: string[] = [];
  let current = "";
  for (const line of script.split("\n")) {
    if (/\\$/.test(line)) {
      current += `${line.slice(0, -1)} `;
      continue;
    }
    current += line;
    if (/(&&|\|\||\|)\s*$/.test(line)) {
      current += "\n";
      continue;
    }
    lines.push(current);
    current = "";
  }
  if (current) lines.push(current);
  return lines;
}

/** The commands of a block that run: curl commands and plain shell variable assignments. */
export function runnableCommands(script: string): string[] {
  return logicalLines(script)
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#") && !line.startsWith("export "))
    .filter((line) => /(^|[\s$(])curl\s/.test(line) || /^[A-Za-z_][A-Za-z0-9_]*=/.test(line));
}

/** How many curl calls a list of commands makes. */
export const curlCount = (commands: string[]) =>
  commands.reduce((count, command) => count + (command.match(/(^|[\s$(])curl\s/g)?.length ?? 0), 0);

/** The examples of one Markdown file. */
export function markdownExamples(file: string, markdown: string): DocExample[] {
  const examples: DocExample[] = [];
  const lines = markdown.split("\n");
  for (let index = 0; index < lines.length; index++) {
    const opening = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)/.exec(lines[index]!);
    if (!opening) continue;
    const [, indent, fence, language] = opening;
    const body: string[] = [];
    let end = index + 1;
    while (end < lines.length && !lines[end]!.trimStart().startsWith(fence!)) {
      body.push(lines[end]!.startsWith(indent!) ? lines[end]!.slice(indent!.length) : lines[end]!);
      end++;
    }
    const previous = lines
      .slice(0, index)
      .reverse()
      .find((line) => line.trim() !== "");
    if (SHELL_LANGUAGES.has(language!)) {
      const commands = runnableCommands(body.join("\n"));
      const notRun = previous === undefined ? undefined : NOT_RUN.exec(previous)?.[1];
      if (curlCount(commands) > 0) examples.push({ where: `${file}:${index + 1}`, commands, notRun });
    }
    index = end;
  }
  return examples;
}

const unescapeHtml = (text: string) =>
  text
    .replace(/&quot;/g, '"')
    .replace(/&#x27;/g, "'")
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");

/** The examples of a rendered page: each `<pre><code>` block that calls curl. */
export function pageExamples(page: string, html: string): DocExample[] {
  const blocks = [...html.matchAll(/<pre[^>]*>\s*<code[^>]*>([\s\S]*?)<\/code>\s*<\/pre>/g)].map((match) =>
    unescapeHtml((match[1] ?? "").replace(/<!-- -->/g, "")),
  );
  return blocks.flatMap((block, index) => {
    const commands = runnableCommands(block);
    return curlCount(commands) > 0 ? [{ where: `${page} block ${index + 1}`, commands }] : [];
  });
}

/** A block's commands as the test runs them: the development origin and the placeholder ids replaced. */
export function withDemoIds(commands: string[], { origin, orderId, fileId }: DemoIds): string[] {
  return commands.map((command) =>
    command
      .split(DEVELOPMENT_ORIGIN)
      .join(origin)
      .replace(/ord_\.\.\.(?!\.)/g, orderId)
      .replace(/fil_\.\.\.(?!\.)/g, fileId),
  );
}
