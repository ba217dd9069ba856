import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

/**
 * The layers of lib/ as `npm run lint` holds them (.dependency-cruiser.cjs): the rules pass on the code, fail
 * with their sentence on a fixture that breaks them, and docs/development.md draws the same layers.
 */
const CONFIG = path.resolve(".dependency-cruiser.cjs");
const CRUISER = path.resolve("node_modules/dependency-cruiser/bin/dependency-cruiser.mjs");
const { layers } = createRequire(import.meta.url)(CONFIG) as {
  layers: { engines: string[]; domain: string[]; delivery: string[] };
};

const cruise = (cwd: string, ...targets: string[]) =>
  promisify(execFile)(process.execPath, [CRUISER, ...targets, "--config", CONFIG, "--output-type", "err-long"], {
    cwd,
  }).then(
    ({ stdout }) => ({ code: 0, stdout }),
    (error: { code: number; stdout: string }) => ({ code: error.code, stdout: error.stdout }),
  );

describe("the layers of lib/", () => {
  it("hold in the code, as npm run lint checks them", async () => {
    const { code, stdout } = await cruise(".", "lib", "app", "components", "pages", "scripts", "proxy.ts");
    expect(stdout).toContain("no dependency violations found");
    expect(code).toBe(0);
  }, 60_000);

  it("fail a domain module that imports a surface, or a folder later in the domain, with a sentence", async () => {
    const { code, stdout } = await cruise(path.resolve("tests/architecture/fixtures/layer-breach"), "lib");
    expect(code).not.toBe(0);
    expect(stdout).toContain("error domain-never-imports-delivery: lib/keys/leak.ts → lib/api/routes.ts");
    expect(stdout).toContain("error domain-order-orders: lib/orders/upward.ts → lib/tables/versions.ts");
    expect(stdout).toMatch(/Domain folders answer with values and AppErrors/);
  }, 60_000);

  it("are the ones docs/development.md draws", () => {
    const picture = readFileSync("docs/development.md", "utf8").split("## Layers")[1]!.split("```")[1]!;
    const drawn = (layer: string) => new RegExp(`^${layer} +(.+)$`, "m").exec(picture)?.[1]?.trim().split(/ +/);
    expect(drawn("domain")).toEqual(layers.domain);
    expect(new Set(drawn("engines"))).toEqual(new Set(layers.engines));
    expect(new Set(drawn("delivery"))).toEqual(new Set(layers.delivery));
  });
});
