import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

/**
 * Every screenshot README.md and docs/*.md name (`screenshots/NAME.png`, as a link, an image or in
 * code) is in docs/screenshots/, where the e2e specs' copies are kept. Pure file reading.
 */

const SCREENSHOTS = path.resolve("docs/screenshots");
const DOCS = [
  "README.md",
  ...readdirSync("docs")
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`),
];

/** The screenshot names a Markdown text mentions: `screenshots/NAME.png` anywhere in it. */
export function screenshotsNamed(markdown: string): string[] {
  return [...new Set([...markdown.matchAll(/screenshots\/([\w.-]+\.png)/g)].map((match) => match[1]!))];
}

describe("screenshots named by the docs", () => {
  it("finds names in images, links and code", () => {
    expect(
      screenshotsNamed(
        "![a](screenshots/a-desktop.png) [b](docs/screenshots/b.png) `docs/screenshots/c-phone.png`, `a-desktop.png`",
      ),
    ).toEqual(["a-desktop.png", "b.png", "c-phone.png"]);
  });

  it.each(DOCS)("every screenshot %s names exists in docs/screenshots", (doc) => {
    const missing = screenshotsNamed(readFileSync(doc, "utf8")).filter(
      (name) => !existsSync(path.join(SCREENSHOTS, name)),
    );
    expect(missing, `${doc} names screenshots that are not in docs/screenshots/`).toEqual([]);
  });
});
