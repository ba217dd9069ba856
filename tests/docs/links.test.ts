import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

/**
 * Every relative link and `#anchor` in README.md and docs/*.md must resolve: the file (or directory) exists, and an
 * anchor names a heading of the target file by the slug GitHub gives it. Pure file reading, no server.
 */

type Files = { exists(file: string): boolean; read(file: string): string };

const diskFiles: Files = { exists: (file) => existsSync(file), read: (file) => readFileSync(file, "utf8") };

/** GitHub's heading id (github-slugger): lower case, punctuation and symbols dropped, each space a hyphen. */
export function githubSlug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

/** The text a heading renders to: code spans keep their content, links their text, emphasis and HTML go. */
function headingText(markdown: string): string {
  return markdown
    .split(/(`+[^`]*`+)/)
    .map((part, index) => {
      if (index % 2 === 1) return part.replace(/^`+|`+$/g, "");
      return part
        .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
        .replace(/<[^>]+>/g, "")
        .replace(/\*+/g, "")
        .replace(/(^|[^\p{L}\p{N}])_+(?=\S)|(?<=\S)_+(?=[^\p{L}\p{N}]|$)/gu, "$1");
    })
    .join("")
    .trim();
}

/** Lines outside fenced code blocks, with their inline code spans blanked out (for link scanning). */
function proseLines(markdown: string): { line: string; raw: string; number: number }[] {
  const lines: { line: string; raw: string; number: number }[] = [];
  let fence: string | undefined;
  markdown.split("\n").forEach((raw, index) => {
    const opening = /^\s{0,3}(`{3,}|~{3,})/.exec(raw)?.[1];
    if (fence) {
      if (opening && opening[0] === fence[0] && opening.length >= fence.length) fence = undefined;
      return;
    }
    if (opening) {
      fence = opening;
      return;
    }
    lines.push({
      raw,
      line: raw.replace(/(`+)(?:(?!\1)[\s\S])*?\1/g, (span) => " ".repeat(span.length)),
      number: index + 1,
    });
  });
  return lines;
}

/** The anchors a Markdown file offers: one per heading (ATX or setext), duplicates numbered -1, -2, ... */
export function headingSlugs(markdown: string): Set<string> {
  const slugs = new Set<string>();
  const seen = new Map<string, number>();
  const add = (heading: string) => {
    const base = githubSlug(headingText(heading));
    let slug = base;
    let count = seen.get(base) ?? 0;
    while (slugs.has(slug)) slug = `${base}-${++count}`;
    seen.set(base, count);
    slugs.add(slug);
  };
  const lines = proseLines(markdown);
  lines.forEach(({ raw, number }, index) => {
    const atx = /^\s{0,3}#{1,6}(?:\s+(.*?))?(?:\s+#+)?\s*$/.exec(raw);
    if (atx) return add(atx[1] ?? "");
    const previous = lines[index - 1];
    if (/^\s{0,3}(=+|-+)\s*$/.test(raw) && previous && previous.number === number - 1 && previous.raw.trim() !== "") {
      if (!/^\s{0,3}(#|[-*+>|]|\d+\.)/.test(previous.raw)) add(previous.raw.trim());
    }
  });
  return slugs;
}

/** Link destinations in prose: inline links and images, and reference definitions. */
export function linkTargets(markdown: string): { target: string; line: number }[] {
  const targets: { target: string; line: number }[] = [];
  for (const { line, number } of proseLines(markdown)) {
    for (const match of line.matchAll(/!?\[(?:[^[\]]|\[[^[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g)) {
      targets.push({ target: match[1] ?? "", line: number });
    }
    const definition = /^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?/.exec(line);
    if (definition?.[1]) targets.push({ target: definition[1], line: number });
  }
  return targets;
}

/** What is wrong with the relative links of one Markdown file (repo-relative path), as readable sentences. */
export function brokenLinks(file: string, files: Files, root = "."): string[] {
  const problems: string[] = [];
  const slugsOf = new Map<string, Set<string>>();
  const slugs = (target: string) => {
    if (!slugsOf.has(target)) slugsOf.set(target, headingSlugs(files.read(path.join(root, target))));
    return slugsOf.get(target)!;
  };
  for (const { target, line } of linkTargets(files.read(path.join(root, file)))) {
    const where = `${file}:${line}: ${target || "(empty link)"}`;
    if (target === "") {
      problems.push(`${where}: empty link`);
      continue;
    }
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("//")) continue; // https:, mailto:: not files
    const hash = target.indexOf("#");
    const pathPart = decodeURIComponent(hash === -1 ? target : target.slice(0, hash));
    const anchor = hash === -1 ? undefined : decodeURIComponent(target.slice(hash + 1));
    const resolved =
      pathPart === ""
        ? file
        : path.normalize(pathPart.startsWith("/") ? pathPart.slice(1) : path.join(path.dirname(file), pathPart));
    if (resolved.startsWith("..")) {
      problems.push(`${where}: points outside the repository`);
      continue;
    }
    if (!files.exists(path.join(root, resolved))) {
      problems.push(`${where}: ${resolved} does not exist`);
      continue;
    }
    if (anchor === undefined) continue;
    if (!resolved.endsWith(".md")) {
      problems.push(`${where}: an anchor into a file that is not Markdown`);
      continue;
    }
    if (!slugs(resolved).has(anchor)) problems.push(`${where}: ${resolved} has no heading #${anchor}`);
  }
  return problems;
}

/** README.md and every Markdown file under docs/. */
function documentationFiles(): string[] {
  const docs = readdirSync("docs", { recursive: true, encoding: "utf8" })
    .filter((name) => name.endsWith(".md") && statSync(path.join("docs", name)).isFile())
    .map((name) => path.join("docs", name))
    .sort();
  return ["README.md", ...docs];
}

/** An in-memory file tree, for checking that the checker itself fails. */
function memoryFiles(tree: Record<string, string>): Files {
  return {
    exists: (file) =>
      Object.keys(tree).some(
        (name) => path.normalize(name) === path.normalize(file) || name.startsWith(`${path.normalize(file)}/`),
      ),
    read: (file) => {
      const found = Object.entries(tree).find(([name]) => path.normalize(name) === path.normalize(file));
      if (!found) throw new Error(`no such file: ${file}`);
      return found[1];
    },
  };
}

describe("the checker", () => {
  it("makes GitHub's slugs", () => {
    expect(githubSlug(headingText("The API (`/api/v1`): decisions, errors, limits"))).toBe(
      "the-api-apiv1-decisions-errors-limits",
    );
    expect(githubSlug(headingText("Data in another format: `--format`"))).toBe("data-in-another-format---format");
    expect(githubSlug(headingText("pandas (Python): `read_pandas`"))).toBe("pandas-python-read_pandas");
    expect(githubSlug(headingText("Local state: `.data/`"))).toBe("local-state-data");
    expect(githubSlug(headingText("The path users run: 10,000 accounts (`npm run bench:accounts`)"))).toBe(
      "the-path-users-run-10000-accounts-npm-run-benchaccounts",
    );
    expect(githubSlug(headingText("**Bold** and _emphasis_ and a [link](x.md)"))).toBe("bold-and-emphasis-and-a-link");
    expect(githubSlug(headingText("Größe → 2× Über"))).toBe("größe--2-über");
  });

  it("numbers duplicate headings and ignores headings inside code blocks", () => {
    const slugs = headingSlugs(
      "# Tests\n\n## Tests\n\n```sh\n# Tests in a shell comment\n```\n\n### Tests\n\nSetext\n------\n",
    );
    expect([...slugs]).toEqual(["tests", "tests-1", "tests-2", "setext"]);
  });

  it("finds links in prose only", () => {
    const targets = linkTargets(
      'See [a](a.md#x), ![pic](img.png "title") and `[not](code.md)`.\n\n```\n[nor](fence.md)\n```\n[ref]: b.md\n',
    );
    expect(targets.map(({ target }) => target)).toEqual(["a.md#x", "img.png", "b.md"]);
  });

  it("detects a missing file, a missing anchor and a bad anchor in the same file", () => {
    const files = memoryFiles({
      "README.md": [
        "# Top",
        "[good](docs/a.md#first-part) [good too](#top) [external](https://example.com/missing) [dir](docs)",
        "[missing file](docs/nope.md)",
        "[missing anchor](docs/a.md#second-part)",
        "[bad local anchor](#bottom)",
        "[escape](../outside.md)",
      ].join("\n"),
      "docs/a.md": "# First part\n\n```\n## Second part\n```\n",
    });
    expect(brokenLinks("README.md", files)).toEqual([
      "README.md:3: docs/nope.md: docs/nope.md does not exist",
      "README.md:4: docs/a.md#second-part: docs/a.md has no heading #second-part",
      "README.md:5: #bottom: README.md has no heading #bottom",
      "README.md:6: ../outside.md: points outside the repository",
    ]);
  });

  it("resolves links relative to the linking file", () => {
    const files = memoryFiles({
      "docs/a.md": "[b](b.md#b) [readme](../README.md#read-me) [wrong](README.md)",
      "docs/b.md": "# B",
      "README.md": "# Read me",
    });
    expect(brokenLinks("docs/a.md", files)).toEqual(["docs/a.md:1: README.md: docs/README.md does not exist"]);
  });
});

describe("README.md and docs/", () => {
  const files = documentationFiles();

  it("include the manual's pages", () => {
    expect(files).toEqual(expect.arrayContaining(["README.md", "docs/operations.md", "docs/development.md"]));
  });

  it.each(files)("%s: every relative link and anchor resolves", (file) => {
    expect(brokenLinks(file, diskFiles)).toEqual([]);
  });

  it("every page of docs/ is reachable from the README's table", () => {
    const linked = new Set(
      linkTargets(readFileSync("README.md", "utf8")).map(({ target }) => path.normalize(target.split("#")[0] ?? "")),
    );
    const unlinked = files.filter((file) => file.startsWith("docs/") && !linked.has(file));
    expect(unlinked).toEqual([]);
  });

  it("each page of docs/ says first who it is for", () => {
    const pages = files.filter((file) => file.startsWith("docs/"));
    const missing = pages.filter((file) => {
      const firstParagraph =
        readFileSync(file, "utf8")
          .split("\n")
          .slice(1)
          .find((line) => line.trim() !== "") ?? "";
      return !/^For /.test(firstParagraph);
    });
    expect(missing).toEqual([]);
  });
});
