import { Prisma } from "../db/client";

/**
 * The SQL that adds what a table promises (docs/tables.md, "What a table promises") to the API's Table and Version JSON:
 * its columns with the dictionary's description, unit and example, and its freshness. `t` is an
 * order_tables alias, `columns` a jsonb array of {name, type, nullable}, `createdAt` the current
 * version's time. Kept beside the Table's JSON (./queries.ts), which every door reads.
 */

/** Seconds as an ISO 8601 duration, as lib/tables/durations.ts's isoDuration writes it (P1D, PT6H, P22DT12H). */
export const isoDurationSql = (seconds: Prisma.Sql) => Prisma.sql`CASE WHEN ${seconds} = 0 THEN 'PT0S' ELSE concat('P',
  NULLIF(${seconds} / 86400, 0) || 'D',
  CASE WHEN ${seconds} % 86400 > 0 THEN concat('T', NULLIF(${seconds} % 86400 / 3600, 0) || 'H',
    NULLIF(${seconds} % 3600 / 60, 0) || 'M', NULLIF(${seconds} % 60, 0) || 'S') END) END`;

/** The columns in order, each with its dictionary entry (null fields until described); null without columns. */
export const describedColumnsSql = (t: string, columns: Prisma.Sql) => {
  const doc = (field: string) => Prisma.sql`${Prisma.raw(t)}.column_docs -> (c ->> 'name') -> ${field}`;
  return Prisma.sql`(SELECT json_agg(json_build_object('name', c -> 'name', 'type', c -> 'type',
      'nullable', c -> 'nullable', 'description', ${doc("description")}, 'unit', ${doc("unit")},
      'example', ${doc("example")}) ORDER BY n)
    FROM jsonb_array_elements(${columns}) WITH ORDINALITY AS described(c, n))`;
};

/** When the next version is due: the current version's time plus the cadence and its grace (null without either). */
export const expectedBySql = (t: string, createdAt: Prisma.Sql) =>
  Prisma.sql`(${createdAt} + make_interval(secs => ${Prisma.raw(t)}.cadence_seconds + ${Prisma.raw(t)}.grace_seconds))`;

/** The Table's `freshness`: null without a cadence; `late` once expected_by has passed on the database's clock. */
export const freshnessSql = (t: string, createdAt: Prisma.Sql, isoUtc: (column: Prisma.Sql) => Prisma.Sql) => {
  const table = Prisma.raw(t);
  const expectedBy = expectedBySql(t, createdAt);
  return Prisma.sql`CASE WHEN ${table}.cadence_seconds IS NULL THEN NULL ELSE json_build_object(
    'every', ${isoDurationSql(Prisma.sql`${table}.cadence_seconds`)},
    'grace', ${isoDurationSql(Prisma.sql`${table}.grace_seconds`)},
    'expected_by', ${isoUtc(expectedBy)},
    'late', COALESCE(${expectedBy} <= now(), false)) END`;
};
