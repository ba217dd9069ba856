import { describe, expect, it } from "vitest";
import {
  commonFolder,
  DEFAULT_KEY_TEMPLATE,
  keySafe,
  keyTemplateProblem,
  prefixProblem,
  renderKey,
  runFolder,
} from "./template";

const values = {
  order_id: "ord_1",
  order_name: "Prices Q3",
  file_name: "products.csv",
  file_id: "fil_1",
  date: "2026-11-26",
};

describe("key templates", () => {
  it.each([
    ["", /empty/],
    ["/{order_id}/{file_name}", /starts with \//],
    ["{order_id}//{file_name}", /empty folder name/],
    ["{order_id}/{file_name}/", /empty folder name/],
    ["{order_id}/../{file_name}", /"\.\." folder/],
    ["./{file_name}", /"\." folder/],
    ["{order_id}\\{file_name}", /backslash/],
    ["{order_id}/{nope}/{file_name}", /\{nope\} is not a placeholder/],
    ["{order_id}/{file_name", /unmatched/],
    ["{order_id}/data}/{file_name}", /unmatched/],
    ["{order_id}/{date}", /must end in \{file_name\} or \{file_id\}/],
    ["{order_id}/{file_name}\u0000", /control characters/],
    ["x".repeat(501) + "{file_name}", /longer than 500/],
  ])("refuses %j", (template, problem) => {
    expect(keyTemplateProblem(template)).toMatch(problem);
  });

  it.each([DEFAULT_KEY_TEMPLATE, "{file_id}", "exports/{date}/{order_name}-{order_id}/{file_name}", "a.{file_id}.b"])(
    "takes %j",
    (template) => expect(keyTemplateProblem(template)).toBeUndefined(),
  );

  it("renders the default for a table's file, and leaves the table's folders out for a tableless one", () => {
    expect(renderKey(DEFAULT_KEY_TEMPLATE, { ...values, table: "products", version: 3 })).toBe(
      "ord_1/products/v3/products.csv",
    );
    expect(renderKey(DEFAULT_KEY_TEMPLATE, values)).toBe("ord_1/products.csv");
    expect(renderKey("{date}/{table}-{version}/{order_id}/{file_name}", values)).toBe("2026-11-26/ord_1/products.csv");
  });

  it("makes values safe: separators, control characters, '.' and '..' never become folders", () => {
    expect(renderKey("{order_name}/{file_name}", { ...values, order_name: "../../etc" })).toBe(
      ".._.._etc/products.csv",
    );
    expect(renderKey("{order_name}/{file_name}", { ...values, order_name: ".." })).toBe("_/products.csv");
    expect(renderKey("{order_name}./{file_name}", { ...values, order_name: "." })).toBe("_./products.csv");
    expect(renderKey("{order_name}/{file_name}", { ...values, order_name: "a\nb\\c" })).toBe("a_b_c/products.csv");
    expect(keySafe("")).toBe("_");
    for (const name of ["../x", "/abs", "a//b", "."]) {
      const key = renderKey("{order_name}/{file_name}", { ...values, order_name: name });
      expect(key.split("/").every((segment) => segment !== "" && segment !== "." && segment !== "..")).toBe(true);
      expect(key.startsWith("/")).toBe(false);
    }
  });

  it("checks prefixes and finds the folder a run's files share", () => {
    expect(prefixProblem("")).toBeUndefined();
    expect(prefixProblem("lake/incoming/")).toBeUndefined();
    expect(prefixProblem("/lake")).toMatch(/starts with/);
    expect(prefixProblem("lake/../x")).toMatch(/\.\./);
    expect(prefixProblem("lake//x")).toMatch(/empty/);
    expect(commonFolder(["o/t/v1/a.csv", "o/t/v1/b.csv"])).toBe("o/t/v1");
    expect(commonFolder(["o/t/v1/a.csv", "o/u/v1/b.csv"])).toBe("o");
    expect(commonFolder(["a.csv", "o/b.csv"])).toBe("");
    expect(commonFolder([])).toBe("");
  });

  it("gives a run with no files the folder the template gives its order, never the top", () => {
    const run = { order_id: "ord_1", order_name: "Q3", date: "2026-11-26" };
    expect(runFolder("{order_id}/{table}/v{version}/{file_name}", run)).toBe("ord_1");
    expect(runFolder("{order_id}/{table}/v{version}/{file_name}", { ...run, table: "t", version: 3 })).toBe(
      "ord_1/t/v3",
    );
    expect(runFolder("{date}/{order_name}/{file_id}/{file_name}", run)).toBe("2026-11-26/Q3");
    expect(runFolder("{file_name}", run)).toBe("");
  });
});
