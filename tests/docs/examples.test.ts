import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { db } from "../../lib/db/client";
import { DEMO_EMAIL } from "../../lib/docs/examples";
import { seedDemo } from "../../scripts/seed-demo";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, type TestEnvironment } from "../helpers/fixtures";
import { startServer, type TestServer } from "../helpers/server";
import {
  curlCount,
  markdownExamples,
  pageExamples,
  runnableCommands,
  withDemoIds,
  type DemoIds,
  type DocExample,
} from "./doc-examples";

/**
 * Every curl example of README.md, docs/*.md, /getting-started and /docs/api runs, as written, against the production
 * server with the demo data loaded (the substitutions: ./doc-examples.ts), and must exit 0: `curl --fail` exits
 * non-zero on any 4xx or 5xx answer, so each call answered 2xx or 3xx. Together they must reach every door a buyer
 * has: orders, files, tables, versions, quality reports, change files, rows, SQL, subsets, Delta Sharing and MCP.
 */

const markdownFiles = async () => [
  "README.md",
  ...(await readdir("docs"))
    .filter((name) => name.endsWith(".md"))
    .sort()
    .map((name) => `docs/${name}`),
];

let env: TestEnvironment;
let server: TestServer;
let ids: DemoIds;
let keys: { datasets: string; social: string };
let workDir: string;
const called: string[] = [];
const ran = { blocks: 0, curls: 0, notRun: [] as string[] };

beforeAll(async () => {
  env = await createTestEnvironment("doc_examples");
  await seedDemo(() => {});
  const demo = await db().user.findUniqueOrThrow({ where: { email: DEMO_EMAIL } });
  const order = await db().order.findFirstOrThrow({
    where: { buyerId: demo.id, status: "delivered" },
    include: { files: { where: { origin: "delivered" }, orderBy: [{ createdAt: "asc" }, { id: "asc" }], take: 1 } },
  });
  keys = {
    datasets: (await apiKey(demo.id)).secret,
    social: (await apiKey(demo.id, { permission: "scrape:read" })).secret,
  };
  workDir = await mkdtemp(path.join(os.tmpdir(), "doc-examples-"));
  server = await startServer({
    databaseUrl: env.database.url,
    storageDir: env.storageDir,
    // The examples are many calls of one account: the rate limit is another test's subject.
    env: { REDIS_URL: "", RATE_LIMIT_EXEMPT_BUYERS: demo.id, DATASET_TEMP_DIR: path.join(workDir, "engine") },
  });
  ids = { origin: server.url, orderId: order.id, fileId: order.files[0]!.id };
}, 600_000);

afterAll(async () => {
  console.info(
    `Documented examples: ${ran.curls} curl calls in ${ran.blocks} blocks ran; ${ran.notRun.length} marked not run` +
      (ran.notRun.length ? ` (${ran.notRun.join("; ")})` : ""),
  );
  await server?.stop();
  await env?.cleanup();
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

/** The commands with the block's own variables (`TABLE=...`) written out, to see which URLs they call. */
function withVariables(commands: string[]): string[] {
  const values = new Map<string, string>();
  return commands.map((command) => {
    const assignment = /^([A-Za-z_]\w*)=(?:"([^"]*)"|(\S*))$/.exec(command);
    const expanded = command.replace(/\$(\w+)/g, (text, name: string) => values.get(name) ?? text);
    if (assignment) values.set(assignment[1]!, assignment[2] ?? assignment[3] ?? "");
    return expanded;
  });
}

/** Runs one example's commands in a directory of its own; rejects with curl's words on a non-zero exit. */
async function run(example: DocExample): Promise<void> {
  const commands = withDemoIds(example.commands, ids);
  const dir = await mkdtemp(path.join(workDir, "run-"));
  // -S shows the error of a failed call (--fail's "The requested URL returned error: 400") in stderr.
  const script = commands.map((command) => command.replace(/(^|[\s$(])curl\s/g, "$1curl -sS ")).join("\n");
  await new Promise<void>((resolve, reject) =>
    execFile(
      "bash",
      ["-euo", "pipefail", "-c", script],
      {
        cwd: dir,
        env: { ...process.env, DATASET_ACCESS_KEY: keys.datasets, SOCIAL_KEY: keys.social },
        timeout: 240_000,
        maxBuffer: 64 * 1024 * 1024,
      },
      (error, _stdout, stderr) =>
        error ? reject(new Error(`${example.where} failed:\n${script}\n${stderr}`)) : resolve(),
    ),
  );
  called.push(...withVariables(commands).flatMap((command) => command.match(/\/api\/[^\s"'?]*/g) ?? []));
  ran.blocks++;
  ran.curls += curlCount(commands);
}

describe("the example extractor", () => {
  it("keeps curl commands and their variables, joins continuations, drops the rest", () => {
    const script = [
      "export DATASET_ACCESS_KEY=dak_...   # the secret",
      '# a comment with curl -H "x"',
      'URL="http://localhost:3000/api/v1/orders"',
      'curl --fail -H "Authorization: Bearer $DATASET_ACCESS_KEY" \\',
      '  "$URL"',
      'while code=$(curl --fail -s "$URL") &&',
      '  [ "$code" = 202 ]; do sleep 5; done',
      "python3 dataset_access.py sync --dir ./datasets",
    ].join("\n");
    expect(runnableCommands(script)).toEqual([
      'URL="http://localhost:3000/api/v1/orders"',
      'curl --fail -H "Authorization: Bearer $DATASET_ACCESS_KEY"    "$URL"',
      'while code=$(curl --fail -s "$URL") &&\n  [ "$code" = 202 ]; do sleep 5; done',
    ]);
  });

  it("finds shell blocks with curl, indented ones too, and the mark of one not run", () => {
    const markdown = [
      "# Page",
      "```sh",
      "curl --fail http://localhost:3000/api/v1/orders/ord_.../files/fil_...",
      "```",
      "1. A step:",
      "   ```shell",
      "   curl --fail http://localhost:3000/api/v1/orders",
      "   ```",
      "<!-- example: not run, it needs an operator -->",
      "```bash",
      "curl --fail http://localhost:3000/api/v1/exports",
      "```",
      "```python",
      "curl = 1",
      "```",
      "```sh",
      "npm run admin -- order:list",
      "```",
    ].join("\n");
    const examples = markdownExamples("page.md", markdown);
    expect(examples.map(({ where, notRun }) => [where, notRun])).toEqual([
      ["page.md:2", undefined],
      ["page.md:6", undefined],
      ["page.md:10", "it needs an operator"],
    ]);
    expect(
      withDemoIds(examples[0]!.commands, { origin: "http://127.0.0.1:9", orderId: "ord_1", fileId: "fil_2" }),
    ).toEqual(["curl --fail http://127.0.0.1:9/api/v1/orders/ord_1/files/fil_2"]);
  });

  it("reads a page's code blocks, entities decoded", () => {
    const html =
      '<pre tabindex="0"><code>curl --fail -H &quot;Authorization: Bearer $DATASET_ACCESS_KEY&quot; \\\n  &quot;http://x/api/v1/orders?limit=2&amp;offset=0&quot;</code></pre>' +
      "<pre><code>npx dataset-access sync</code></pre>";
    expect(pageExamples("/p", html)).toEqual([
      {
        where: "/p block 1",
        commands: [
          'curl --fail -H "Authorization: Bearer $DATASET_ACCESS_KEY"    "http://x/api/v1/orders?limit=2&offset=0"',
        ],
      },
    ]);
  });
});

describe("every documented example runs against the demo", async () => {
  const examples = (
    await Promise.all((await markdownFiles()).map(async (file) => markdownExamples(file, await readFile(file, "utf8"))))
  ).flat();

  it.each(examples.map((example) => [example.where, example] as const))("%s", async (_where, example) => {
    if (example.notRun) {
      ran.notRun.push(`${example.where}: ${example.notRun}`);
      return;
    }
    await run(example);
  });

  it.each(["/getting-started", "/docs/api"])("every curl example of %s", async (page) => {
    const html = await (await fetch(`${server.url}${page}`)).text();
    // What the page teaches it says itself: a buyer cannot open a file of docs/.
    expect(html.replace(/<script[\s\S]*?<\/script>/g, "")).not.toMatch(/docs\/[a-z-]+\.md/);
    const found = pageExamples(page, html);
    expect(found.length).toBeGreaterThan(3);
    for (const example of found) await run(example);
  });

  it("reach every door a buyer has", () => {
    const doors = [
      /^\/api\/v1\/orders$/,
      /^\/api\/v1\/orders\/ord_\w+$/,
      /\/files\/fil_\w+$/,
      /\/files\/fil_\w+\/preview$/,
      /\/tables\/\w+$/,
      /\/tables\/\w+\/versions$/,
      /\/versions\/\d+\/quality$/,
      /\/versions\/\d+\/changes$/,
      /\/tables\/\w+\/rows$/,
      /\/tables\/\w+\/subset$/,
      /\/orders\/ord_\w+\/sql$/,
      /^\/api\/v1\/scrape\/\w+\/profile$/,
      /^\/api\/delta-sharing\//,
      /^\/api\/mcp$/,
    ];
    expect(doors.filter((door) => !called.some((url) => door.test(url)))).toEqual([]);
  });
});
