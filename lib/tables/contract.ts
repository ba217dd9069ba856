import { createHash } from "node:crypto";
import { stringify as yamlText } from "yaml";
import type { SqlRunner } from "../db/client";
import type { DataContract } from "../schemas/contract";
import type { CheckName, CheckSetting } from "../schemas/quality";
import { checkSettings } from "./quality-checks";
import { tableContractSource, type ContractSource } from "./queries";

/**
 * A table's data contract (docs/tables.md, "What a table promises"), in the Open Data Contract Standard v3.1.0: built on each
 * request from what the table is now (its current version's columns and nullability, its key, its
 * data dictionary, the quality checks that gate its versions, its cadence), so it is kept true by the
 * same checks that judge every version. YAML by default, JSON on request; the ETag is the body's.
 */

export type ContractAnswer = { body: string; contentType: string; etag: string };

export async function tableContract(
  buyerId: string,
  orderId: string,
  table: string,
  options: { json: boolean; origin: string; supportEmail?: string },
  sql?: SqlRunner,
): Promise<ContractAnswer> {
  const source = await tableContractSource(buyerId, orderId, table, sql);
  const document = dataContract(source, orderId, options);
  const body = options.json ? JSON.stringify(document) : yamlText(document, { lineWidth: 0 });
  const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 32)}"`;
  return { body, contentType: options.json ? "application/json" : "application/yaml; charset=utf-8", etag };
}

/** The ODCS document of one table of an order. */
export function dataContract(
  source: ContractSource,
  orderId: string,
  { origin, supportEmail }: { origin: string; supportEmail?: string },
): DataContract {
  const keyed = source.key.length ? ` keyed by ${source.key.join(", ")}` : "";
  const usage =
    `${source.mode === "append" ? "An append table: each version adds rows" : "A snapshot table: each version is the whole table"}${keyed}, ` +
    `refreshed as numbered versions. Read it through the API (rows, SQL, subsets, downloads) or Delta Sharing.`;
  const sla =
    source.cadenceSeconds === null ? undefined : slaProperties(source.cadenceSeconds, source.graceSeconds ?? 0);
  return {
    apiVersion: "v3.1.0",
    kind: "DataContract",
    id: source.id,
    name: source.name,
    version: `${source.version ?? 0}.0.0`,
    status: source.version === null ? "draft" : "active",
    description: { ...(source.description ? { purpose: source.description } : {}), usage },
    ...(source.createdAt ? { contractCreatedTs: source.createdAt.toISOString() } : {}),
    servers: [
      {
        server: "api",
        type: "custom",
        description: "The Dataset Access API: the table, its versions, rows, SQL and downloads (a datasets:read key).",
        location: `${origin}/api/v1/orders/${orderId}/tables/${source.name}`,
        format: "json",
      },
      {
        server: "delta-sharing",
        type: "custom",
        description: "Delta Sharing: the share orders, the order's id as its schema, the table by name.",
        location: `${origin}/api/delta-sharing`,
        format: "delta-sharing",
        catalog: "orders",
        schema: orderId,
        dataset: source.name,
      },
    ],
    schema: [
      {
        name: source.name,
        physicalName: source.name,
        physicalType: "table",
        logicalType: "object",
        ...(source.description ? { description: source.description } : {}),
        properties: (source.columns ?? []).map((column) => {
          const doc = source.docs[column.name] ?? {};
          const keyAt = source.key.indexOf(column.name);
          return {
            name: column.name,
            physicalName: column.name,
            logicalType: logicalType(column.type),
            physicalType: column.type,
            ...(doc.description ? { description: doc.description } : {}),
            ...(keyAt >= 0 ? { primaryKey: true, primaryKeyPosition: keyAt + 1 } : {}),
            required: !column.nullable,
            ...(doc.example ? { examples: [doc.example] } : {}),
            ...(doc.unit ? { customProperties: [{ property: "unit", value: doc.unit }] } : {}),
          };
        }),
        quality: qualityRules(checkSettings(source.checks), source.mode),
      },
    ],
    ...(sla ? { slaProperties: sla } : {}),
    ...(supportEmail ? { support: [{ channel: "email", tool: "email" as const, url: `mailto:${supportEmail}` }] } : {}),
  };
}

/** ODCS's logical type of a DuckDB type. */
export function logicalType(type: string): DataContract["schema"][number]["properties"][number]["logicalType"] {
  const upper = type.toUpperCase();
  if (upper.endsWith("]")) return "array";
  if (/^(STRUCT|MAP|UNION|JSON)\b/.test(upper)) return "object";
  if (upper === "BOOLEAN") return "boolean";
  if (/^U?(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT)$/.test(upper)) return "integer";
  if (/^(DOUBLE|FLOAT|REAL|DECIMAL)/.test(upper)) return "number";
  if (upper === "DATE") return "date";
  if (upper.startsWith("TIMESTAMP")) return "timestamp";
  if (upper.startsWith("TIME")) return "time";
  return "string";
}

/** The checks that are not off, each with a sentence saying when a version is held or warned. */
function qualityRules(settings: Record<CheckName, CheckSetting>, mode: ContractSource["mode"]) {
  const tableWide: CheckName[] = ["row_count_zero", "row_count_drop", "deleted_fraction"];
  return (Object.entries(settings) as [CheckName, CheckSetting][])
    .filter(([name, setting]) => setting.level !== "off" && !(mode === "append" && tableWide.includes(name)))
    .map(([name, setting]) => {
      const level = setting.level as "hold" | "warn";
      return {
        name,
        type: "custom" as const,
        engine: "dataset-access" as const,
        description: `${level === "hold" ? "Held" : "Published with a warning"} when ${CHECK_SENTENCES[name](setting.threshold)}.`,
        dimension: CHECK_DIMENSIONS[name],
        implementation: { check: name, threshold: setting.threshold, level },
      };
    });
}

const percent = (fraction: number) => `${Math.round(fraction * 1000) / 10}%`;

const CHECK_SENTENCES: Record<CheckName, (threshold: number) => string> = {
  row_count_zero: (threshold) =>
    threshold === 0 ? "a version has no rows" : `a version has ${threshold} rows or fewer`,
  row_count_drop: (threshold) => `rows drop by more than ${percent(threshold)} from the previous version`,
  deleted_fraction: (threshold) => `more than ${percent(threshold)} of the previous version's rows are deleted`,
  null_fraction_increase: (threshold) =>
    `a column's share of nulls rises by more than ${Math.round(threshold * 100)} percentage points`,
  distinct_drop: (threshold) =>
    `a column's distinct values (100 or more before) drop by more than ${percent(threshold)}`,
  distribution_shift: (threshold) =>
    `a column's distribution shifts by a population stability index above ${threshold}`,
};

const CHECK_DIMENSIONS: Record<CheckName, "completeness" | "consistency" | "accuracy"> = {
  row_count_zero: "completeness",
  row_count_drop: "completeness",
  deleted_fraction: "consistency",
  null_fraction_increase: "completeness",
  distinct_drop: "consistency",
  distribution_shift: "accuracy",
};

/** The cadence as ODCS's frequency and its grace as latency, each in the largest unit that divides it. */
function slaProperties(every: number, grace: number) {
  return [
    { property: "frequency" as const, ...inUnit(every) },
    { property: "latency" as const, ...inUnit(grace) },
  ];
}

function inUnit(seconds: number): { value: number; unit: string } {
  for (const [unit, size] of [
    ["d", 86400],
    ["h", 3600],
    ["min", 60],
  ] as const) {
    if (seconds % size === 0 && seconds > 0) return { value: seconds / size, unit };
  }
  return { value: seconds, unit: "s" };
}
