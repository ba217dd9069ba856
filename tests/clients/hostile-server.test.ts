import { spawn } from "node:child_process";
import { existsSync, promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createClient } from "../../clients/typescript/src/client";
import { UnsafeResponseError } from "../../clients/typescript/src/errors";
import { buildTypeScriptClient, CLI, type CliRun } from "./cli";
import { startHostileServer, type FakeFile, type FakeOrder } from "./hostile-server";

/**
 * Both clients' commands against a server that is not the real one (impersonated or compromised):
 * ids and file names that try to leave the target directory D, symbolic links planted in D, and
 * refunded orders named to make `--delete` remove something else. Beside D are sentinels (a victim
 * directory with a file, a file a planted link points to): after every run they are as they were,
 * nothing new appeared beside D, D holds exactly the legitimate files, and the report names every
 * refusal.
 */
const PYTHON_CLIENT = path.resolve("clients/python/dataset_access.py");

/** Runs a command to its end; `tty`: inside a pseudo-terminal (python's pty), as a person sees it. */
function run(command: string[], env: Record<string, string>, { tty = false } = {}): Promise<CliRun> {
  const argv = tty
    ? ["python3", "-c", "import os, pty, sys; sys.exit(os.waitstatus_to_exitcode(pty.spawn(sys.argv[1:])))", ...command]
    : command;
  const child = spawn(argv[0]!, argv.slice(1), { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  const output: CliRun = { code: null, stdout: "", stderr: "" };
  child.stdout.on("data", (chunk) => (output.stdout += chunk));
  child.stderr.on("data", (chunk) => (output.stderr += chunk));
  return new Promise((resolve) => child.once("close", (code) => resolve({ ...output, code })));
}

const clients = {
  typescript: [process.execPath, CLI],
  python: ["python3", PYTHON_CLIENT],
};

const orderId = (n: number) => `ord_${n.toString(16).padStart(32, "0")}`;
const fileId = (n: number) => `fil_${n.toString(16).padStart(32, "0")}`;
const GOOD = orderId(1);
const OTHER = orderId(2);

/** Every path below `dir`, links not followed: a file's content, a link's target, "dir". */
async function tree(dir: string, prefix = ""): Promise<Record<string, string>> {
  const found: Record<string, string> = {};
  for (const name of (await fs.readdir(dir)).sort()) {
    const full = path.join(dir, name);
    const stat = await fs.lstat(full);
    if (stat.isSymbolicLink()) found[prefix + name] = `-> ${await fs.readlink(full)}`;
    else if (stat.isDirectory())
      Object.assign(found, { [`${prefix + name}/`]: "dir" }, await tree(full, `${prefix + name}/`));
    else found[prefix + name] = await fs.readFile(full, "utf8");
  }
  return found;
}

/** What is beside D (everything in the sandbox but D). */
async function besideD(base: string) {
  return Object.fromEntries(Object.entries(await tree(base)).filter(([name]) => !name.startsWith("D/")));
}

type Sandbox = { base: string; dir: string; before: Record<string, string> };

/** base/D for the client, beside it base/victim/keep.txt and base/outside.txt. */
async function sandbox(): Promise<Sandbox> {
  const base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "hostile-")));
  await fs.mkdir(path.join(base, "victim"));
  await fs.writeFile(path.join(base, "victim", "keep.txt"), "precious\n");
  await fs.writeFile(path.join(base, "outside.txt"), "outside\n");
  await fs.mkdir(path.join(base, "D"));
  return { base, dir: path.join(base, "D"), before: await besideD(base) };
}

const file = (n: number, name: string, content = `${name}\n`) => ({
  id: fileId(n),
  name,
  content: Buffer.from(content),
});

/** Names that try to leave D/<order>, or to write over another file; each with a well-formed id. */
function hostileNames(base: string): string[] {
  return [
    "..",
    ".",
    "",
    "../escape.csv",
    "a/b.csv",
    "back\\slash.csv",
    "..\\escape.csv",
    "/abs/path.csv",
    path.join(base, "victim", "keep.txt"),
    "nul\u0000.csv",
    "bell\u0007\u001b[2J.csv",
    "half\udc80.csv",
    "x".repeat(10_000),
    "good.csv", // a second file of the name
    "GOOD.csv", // the same name on macOS and Windows
    "good.csv.part", // the first one's partial download
  ];
}

/** Order ids that are paths, each with one harmless file. */
function hostileOrderIds(base: string): string[] {
  return [
    "..",
    ".",
    "../escape",
    "a/b",
    "/abs/path",
    path.join(base, "victim"),
    "back\\slash",
    "nul\u0000",
    "x".repeat(10_000),
  ];
}

function deliveredOrders(base: string): FakeOrder[] {
  const names = hostileNames(base);
  return [
    {
      id: GOOD,
      name: "good",
      status: "delivered",
      files: [
        file(1, "good.csv"),
        ...names.map((name, i) => file(100 + i, name, "hostile\n")),
        { id: "../fil", name: "bad-id.csv", content: Buffer.from("hostile\n") },
      ],
    },
    ...hostileOrderIds(base).map((id, i): FakeOrder => ({
      id,
      name: `hostile ${i}`,
      status: "delivered",
      files: [file(200 + i, "escaped.csv")],
    })),
    { id: OTHER, name: "other", status: "delivered", files: [file(2, "b.csv")] },
  ];
}

type Refusal = { order: string; file: string | null; reason: string };

/** What was refused, as sorted [order, file] pairs. */
const refusedPairs = (refused: Pick<Refusal, "order" | "file">[]) =>
  refused.map(({ order, file }) => JSON.stringify([order, file])).sort();

beforeAll(buildTypeScriptClient, 120_000);

describe.each(Object.entries(clients))("the %s client against a hostile server", (_, command) => {
  let box: Sandbox;
  let server: Awaited<ReturnType<typeof startHostileServer>> | undefined;

  beforeEach(async () => {
    box = await sandbox();
  });
  afterEach(async () => {
    await server?.close();
    server = undefined;
    await fs.rm(box.base, { recursive: true, force: true });
  });

  const serve = async (orders: FakeOrder[]) => (server = await startHostileServer(orders));
  const env = () => ({ DATASET_ACCESS_URL: server!.url, DATASET_ACCESS_KEY: "dak_test" });
  const cli = (args: string[], options?: { tty?: boolean }) => run([...command, ...args], env(), options);

  /** Nothing beside D changed: the sentinels intact, no escape, nothing at an absolute path. */
  async function expectNothingOutsideD() {
    expect(await besideD(box.base)).toEqual(box.before);
    expect(existsSync("/abs")).toBe(false);
  }

  it("changes: a version number that is no number names no file; good ones are written and verified", async () => {
    const changes = Buffer.from("PAR1 not really\n");
    await serve([
      {
        id: GOOD,
        name: "good",
        status: "delivered",
        files: [],
        tables: {
          evil: { versions: ["../../victim/keep.txt", 2, 1], changes },
          prices: { versions: [3, 2, 1], changes },
        },
      },
    ]);
    const evil = await cli(["changes", "--order", GOOD, "--table", "evil", "--since", "0", "--dir", box.dir]);
    expect(evil.code, evil.stderr).toBe(1);
    expect(evil.stderr).toMatch(/Refused: the server listed a version "\.\.\/\.\.\/victim\/keep\.txt": not a number/);
    await expectNothingOutsideD();
    expect(await tree(box.dir)).toEqual({});
    const good = await cli([
      "changes",
      "--order",
      GOOD,
      "--table",
      "prices",
      "--since",
      "1",
      "--dir",
      box.dir,
      "--json",
    ]);
    expect(good.code, good.stderr).toBe(0);
    expect(JSON.parse(good.stdout)).toMatchObject({
      last_version: 3,
      files: [
        { version: 2, file: "prices.v2.changes.parquet", verified_by: "sha256" },
        { version: 3, file: "prices.v3.changes.parquet", verified_by: "sha256" },
      ],
    });
    expect(Object.keys(await tree(box.dir))).toEqual([
      ".dataset-access-changes.json",
      "prices.v2.changes.parquet",
      "prices.v3.changes.parquet",
    ]);
    // A table name is checked before it names anything: `..` is no table.
    const named = await cli(["changes", "--order", GOOD, "--table", "../x", "--since", "0", "--dir", box.dir]);
    expect(named.code).toBe(3);
    await expectNothingOutsideD();
  });

  it("refuses and reports hostile ids and names, writes nothing outside D, and still syncs the rest", async () => {
    await serve(deliveredOrders(box.base));
    const sync = await cli(["sync", "--dir", box.dir, "--json"]);
    expect(sync.code, sync.stderr).toBe(1);
    const report = JSON.parse(sync.stdout);
    await expectNothingOutsideD();
    expect(Object.keys(await tree(box.dir))).toEqual([
      ".dataset-access.json",
      `${GOOD}/`,
      `${GOOD}/good.csv`,
      `${OTHER}/`,
      `${OTHER}/b.csv`,
    ]);
    expect(await fs.readFile(path.join(box.dir, GOOD, "good.csv"), "utf8")).toBe("good.csv\n");

    const names = hostileNames(box.base);
    const orderIds = hostileOrderIds(box.base);
    expect(report.files).toMatchObject({
      total: 2 + names.length + 1 + orderIds.length,
      downloaded: 2,
      failed: 0,
      refused: names.length + 1 + orderIds.length,
    });
    expect(refusedPairs(report.refused)).toEqual(
      refusedPairs([
        ...[...names, "bad-id.csv"].map((name) => ({ order: GOOD, file: name })),
        ...orderIds.map((id) => ({ order: id, file: null })),
      ]),
    );
    for (const refusal of report.refused as Refusal[]) expect(refusal.reason).toMatch(/\w/);
    expect(report.refused).toContainEqual({
      order: "../escape",
      file: null,
      reason: expect.stringMatching(/order id/),
    });
    expect(report.refused).toContainEqual({ order: GOOD, file: "..", reason: 'the name is ".."' });
    // Nothing of a refused file was even asked for.
    // (Sorted: files are fetched several at once.)
    expect(server!.requests.filter((request) => request.includes("/files/")).sort()).toEqual(
      [`/api/v1/orders/${GOOD}/files/${fileId(1)}`, `/api/v1/orders/${OTHER}/files/${fileId(2)}`].sort(),
    );
    const manifest = JSON.parse(await fs.readFile(path.join(box.dir, ".dataset-access.json"), "utf8"));
    expect(Object.keys(manifest.orders).sort()).toEqual([GOOD, OTHER]);
    expect(Object.keys(manifest.orders[GOOD].files)).toEqual(["good.csv"]);
  });

  it("writes nothing through a symbolic link planted in D: a .part, its ETag file, an order's directory", async () => {
    const linked = orderId(3);
    await serve([
      {
        id: GOOD,
        name: "good",
        status: "delivered",
        files: [file(1, "good.csv"), file(2, "etag.csv"), file(3, "plain.csv")],
      },
      { id: linked, name: "linked", status: "delivered", files: [file(4, "planted.csv")] },
    ]);
    const outside = path.join(box.base, "outside.txt");
    await fs.mkdir(path.join(box.dir, GOOD));
    await fs.symlink(outside, path.join(box.dir, GOOD, "good.csv.part"));
    await fs.writeFile(path.join(box.dir, GOOD, "etag.csv.part"), "et");
    await fs.symlink(outside, path.join(box.dir, GOOD, "etag.csv.part.etag"));
    await fs.symlink(path.join(box.base, "victim"), path.join(box.dir, linked));

    const sync = await cli(["sync", "--dir", box.dir, "--json"]);
    expect(sync.code, sync.stderr).toBe(1);
    const report = JSON.parse(sync.stdout);
    await expectNothingOutsideD();
    expect(report.refused).toEqual([
      { order: GOOD, file: "good.csv", reason: expect.stringMatching(/good\.csv\.part is a symbolic link/) },
      { order: GOOD, file: "etag.csv", reason: expect.stringMatching(/etag\.csv\.part\.etag is a symbolic link/) },
      { order: linked, file: "planted.csv", reason: expect.stringMatching(/is a symbolic link/) },
    ]);
    expect(report.files).toMatchObject({ downloaded: 1, refused: 3 });
    expect(await fs.readFile(path.join(box.dir, GOOD, "plain.csv"), "utf8")).toBe("plain.csv\n");
    expect(await fs.readlink(path.join(box.dir, GOOD, "good.csv.part"))).toBe(outside);
  });

  it("fetches no download link that is not http(s): a file: link would copy a local file into D", async () => {
    const outside = path.join(box.base, "outside.txt");
    await serve([
      {
        id: GOOD,
        name: "good",
        status: "delivered",
        files: [file(1, "good.csv"), { ...file(2, "local.txt", "outside\n"), location: `file://${outside}` }],
      },
    ]);
    const sync = await cli(["sync", "--dir", box.dir, "--json"]);
    expect(sync.code, sync.stderr).toBe(1);
    expect(JSON.parse(sync.stdout).refused).toEqual([
      { order: GOOD, file: "local.txt", reason: "the download link is not http(s) but file:" },
    ]);
    expect(Object.keys(await tree(box.dir))).toEqual([".dataset-access.json", `${GOOD}/`, `${GOOD}/good.csv`]);
    await expectNothingOutsideD();
  });

  it("--delete refuses refunded orders whose ids are paths, even ones an old manifest recorded", async () => {
    const hostile = ["../victim", path.join(box.base, "victim"), "..", "."];
    await serve([
      { id: OTHER, name: "other", status: "delivered", files: [file(2, "b.csv")] },
      ...hostile.map((id, i): FakeOrder => ({ id, name: `hostile ${i}`, status: "refunded", files: [] })),
      { id: orderId(7), name: "gone", status: "refunded", files: [] },
    ]);
    // What a client without these checks would have recorded after syncing "../victim" once.
    const recorded = { "keep.txt": { id: fileId(9), sha256: "0".repeat(64), size: 9 } };
    await fs.writeFile(
      path.join(box.dir, ".dataset-access.json"),
      JSON.stringify({
        version: 1,
        synced_at: null,
        orders: Object.fromEntries(hostile.map((id) => [id, { name: "old", status: "delivered", files: recorded }])),
      }),
    );

    const sync = await cli(["sync", "--dir", box.dir, "--delete", "--json"]);
    expect(sync.code, sync.stderr).toBe(1);
    const report = JSON.parse(sync.stdout);
    await expectNothingOutsideD();
    expect(report.refunded).toEqual([
      ...hostile.map((id, i) => ({ id, name: `hostile ${i}`, action: "refused" })),
      { id: orderId(7), name: "gone", action: "never_downloaded" },
    ]);
    // Issue #39: it said "absent"; a person reads why nothing was removed.
    const printed = await cli(["sync", "--dir", box.dir], { tty: true });
    expect(printed.stdout).toContain(`Refunded: ${orderId(7)} (gone): never downloaded here: nothing to remove`);
    expect(refusedPairs(report.refused)).toEqual(refusedPairs(hostile.map((id) => ({ order: id, file: null }))));
    expect(await fs.readFile(path.join(box.dir, OTHER, "b.csv"), "utf8")).toBe("b.csv\n");
  });

  it("--delete removes only the files the manifest says it wrote, then the directory if nothing else is left", async () => {
    const [kept, emptied] = [orderId(5), orderId(6)];
    const orders: FakeOrder[] = [
      { id: kept, name: "partly mine", status: "delivered", files: [file(1, "r1.csv"), file(2, "r2.csv")] },
      { id: emptied, name: "all mine", status: "delivered", files: [file(3, "s.csv")] },
    ];
    await serve(orders);
    const first = await cli(["sync", "--dir", box.dir, "--json"]);
    expect(first.code, first.stderr).toBe(0);
    for (const order of orders) order.status = "refunded";
    await fs.writeFile(path.join(box.dir, kept, "mine.txt"), "not the tool's\n");

    const sync = await cli(["sync", "--dir", box.dir, "--delete", "--json"]);
    expect(sync.code, sync.stderr).toBe(0);
    const report = JSON.parse(sync.stdout);
    expect(report.refunded).toEqual([
      { id: kept, name: "partly mine", action: "deleted", deleted: ["r1.csv", "r2.csv"], left: ["mine.txt"] },
      { id: emptied, name: "all mine", action: "deleted", deleted: ["s.csv"], left: [] },
    ]);
    expect(report.refused).toEqual([]);
    expect(Object.keys(await tree(box.dir))).toEqual([".dataset-access.json", `${kept}/`, `${kept}/mine.txt`]);
    const manifest = JSON.parse(await fs.readFile(path.join(box.dir, ".dataset-access.json"), "utf8"));
    expect(manifest.orders).toEqual({});
    await expectNothingOutsideD();
  });

  it("download --dir refuses unsafe names, reports them, and downloads the rest", async () => {
    await serve(deliveredOrders(box.base));
    const download = await cli(["download", GOOD, "--dir", box.dir, "--json"]);
    expect(download.code, download.stderr).toBe(1);
    const report = JSON.parse(download.stdout);
    await expectNothingOutsideD();
    expect(Object.keys(await tree(box.dir))).toEqual(["good.csv"]);
    expect(report.files).toEqual([expect.objectContaining({ file: "good.csv", path: path.join(box.dir, "good.csv") })]);
    expect(report.refused.map(({ file }: { file: string }) => file).sort()).toEqual(
      [...hostileNames(box.base), "bad-id.csv"].sort(),
    );
  });

  it("--format: rendition names are checked like any name, their links too; no rendition and a wait that runs out are reported", async () => {
    const parquet = (label: string) => ({ parquet: Buffer.from(`PAR1 ${label} PAR1`) });
    const data = (n: number, name: string, format: string, renditions: FakeFile["renditions"] = parquet(name)) => ({
      ...file(n, name),
      format,
      renditions,
    });
    const long = `${"x".repeat(241)}.csv`; // 245 bytes; as .parquet 249, over the limit
    await serve([
      {
        id: GOOD,
        name: "good",
        status: "delivered",
        files: [
          data(1, "a.csv", "csv"),
          data(2, "A.json", "json"), // A.parquet: a.parquet's name, letter case aside
          data(3, "b.csv", "csv"), // b.parquet: the name of the file below, which keeps it
          data(4, "b.parquet", "parquet", {}),
          data(5, long, "csv"),
          data(6, "slow.csv", "csv", { parquet: "pending" }),
          file(7, "archive.bin"),
          { ...data(8, "local.csv", "csv"), location: `file://${path.join(box.base, "outside.txt")}` },
          data(9, "linked.csv", "csv"),
        ],
      },
    ]);
    await fs.mkdir(path.join(box.dir, GOOD));
    await fs.symlink(path.join(box.base, "outside.txt"), path.join(box.dir, GOOD, "linked.parquet"));

    const sync = await cli(["sync", "--dir", box.dir, "--format", "parquet", "--rendition-wait", "1", "--json"]);
    expect(sync.code, sync.stderr).toBe(1);
    const report = JSON.parse(sync.stdout);
    await expectNothingOutsideD();
    expect(await tree(box.dir)).toEqual({
      ".dataset-access.json": expect.any(String),
      [`${GOOD}/`]: "dir",
      [`${GOOD}/a.parquet`]: "PAR1 a.csv PAR1",
      [`${GOOD}/b.parquet`]: "b.parquet\n",
      [`${GOOD}/linked.parquet`]: `-> ${path.join(box.base, "outside.txt")}`,
    });
    expect(report).toMatchObject({
      format: "parquet",
      files: { total: 9, downloaded: 2, refused: 5, failed: 1, no_rendition: 1 },
      failures: [{ order: GOOD, file: "slow.csv", error: expect.stringMatching(/still being made/) }],
      no_rendition: [{ order: GOOD, file: "archive.bin", reason: expect.stringMatching(/binary/) }],
    });
    expect(report.refused).toEqual([
      {
        order: GOOD,
        file: "A.json",
        reason: expect.stringMatching(
          /^as parquet it would be named "A\.parquet": another file here has the same name/,
        ),
      },
      {
        order: GOOD,
        file: "b.csv",
        reason: expect.stringMatching(/"b\.parquet": another file here has the same name/),
      },
      { order: GOOD, file: long, reason: expect.stringMatching(/longer than 245 bytes$/) },
      { order: GOOD, file: "local.csv", reason: "the download link is not http(s) but file:" },
      { order: GOOD, file: "linked.csv", reason: expect.stringMatching(/linked\.parquet is a symbolic link/) },
    ]);
    // Nothing was asked for a file refused by its name, nor for the binary one.
    const asked = server!.requests.filter((request) => request.includes("/files/"));
    for (const n of [2, 3, 5, 7]) expect(asked.some((request) => request.endsWith(fileId(n)))).toBe(false);
    const manifest = JSON.parse(await fs.readFile(path.join(box.dir, ".dataset-access.json"), "utf8"));
    expect(manifest.orders[GOOD].files).toEqual({
      "a.parquet": expect.objectContaining({ id: fileId(1), format: "parquet", rendition: true }),
      "b.parquet": expect.objectContaining({ id: fileId(4), format: "parquet", rendition: false }),
    });
  });

  it("prints no control character from the server on a terminal", async () => {
    const sneaky = "\u001b]0;owned\u0007\u001b[2J\u202e";
    await serve([
      { id: GOOD, name: "good", status: "delivered", files: [file(1, "good.csv"), file(2, `bell${sneaky}.csv`)] },
      { id: orderId(4), name: `refunded${sneaky}`, status: "refunded", files: [] },
    ]);
    await fs.mkdir(path.join(box.dir, orderId(4)));

    const sync = await cli(["sync", "--dir", box.dir], { tty: true });
    expect(sync.code, sync.stdout).toBe(1);
    expect(sync.stdout).not.toMatch(/[\u0007\u001b\u202e]/);
    expect(sync.stdout).toContain(`Refused: ${GOOD}/bell\\x1b]0;owned\\x07\\x1b[2J\\u202e.csv: `);
    expect(sync.stdout).toContain(
      `Refunded: ${orderId(4)} (refunded\\x1b]0;owned\\x07\\x1b[2J\\u202e): kept (--delete removes it)`,
    );
    // Issue #39: "1 delivered orders".
    expect(sync.stdout).toMatch(/(^|[\r\n])1 delivered order, 2 files: /);
  });
});

describe("the TypeScript library's download into a directory", () => {
  it("refuses a server's file name that is not a name there, and writes nothing", async () => {
    const box = await sandbox();
    const orders: FakeOrder[] = [
      {
        id: GOOD,
        name: "good",
        status: "delivered",
        files: [file(1, ".."), file(2, "../escape.csv"), file(3, "ok.csv")],
      },
    ];
    const server = await startHostileServer(orders);
    try {
      const client = createClient({ baseUrl: server.url, apiKey: "dak_test" });
      const into = `${box.dir}/`;
      for (const name of ["..", "../escape.csv"])
        await expect(client.files.download(GOOD, name, into)).rejects.toThrow(UnsafeResponseError);
      const done = await client.files.download(GOOD, fileId(3), into);
      expect(done.path).toBe(path.join(box.dir, "ok.csv"));
      expect(Object.keys(await tree(box.dir))).toEqual(["ok.csv"]);
      expect(await besideD(box.base)).toEqual(box.before);
    } finally {
      await server.close();
      await fs.rm(box.base, { recursive: true, force: true });
    }
  });
});
