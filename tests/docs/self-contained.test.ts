import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

/**
 * A clone holds everything its documentation and code cite: no tracked file may send a reader to the workspace
 * beside the repository (the specification and contract the project was built from live there, and a clone has
 * neither). Every decision is stated in the project's own docs/. Relative Markdown links that leave the repository
 * are caught by ./links.test.ts; this catches the mentions that are no link (a path in backticks, a code comment).
 */

// Written in pieces so that this file does not mention what it looks for.
const OUTSIDE = [`..${"/"}shared`, `${"CONTRACT"}.md`];

/** Tracked files that are text (git's own view: binary files are left out by `-I`). */
function trackedTextFiles(): string[] {
  const output = execFileSync("git", ["grep", "-I", "-l", "-e", ""], { encoding: "utf8" });
  return output.split("\n").filter(Boolean);
}

export function outsideMentions(file: string, text: string): string[] {
  return text
    .split("\n")
    .flatMap((line, index) =>
      OUTSIDE.filter((needle) => line.includes(needle)).map((needle) => `${file}:${index + 1}: ${needle}`),
    );
}

describe("the repository is self-contained", () => {
  it("the check finds a mention in a comment and in prose", () => {
    expect(outsideMentions("a.ts", `// see ${OUTSIDE[0]}/spec/x.md\nfine\n(${OUTSIDE[1]}, Part 7)`)).toEqual([
      `a.ts:1: ${OUTSIDE[0]}`,
      `a.ts:3: ${OUTSIDE[1]}`,
    ]);
  });

  it("no tracked file cites the workspace outside the repository", () => {
    const files = trackedTextFiles();
    expect(files).toEqual(expect.arrayContaining(["README.md", "docs/api.md", "lib/contract.ts"]));
    const mentions = files.flatMap((file) => outsideMentions(file, readFileSync(file, "utf8")));
    expect(mentions).toEqual([]);
  });
});
