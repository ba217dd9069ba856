import { DuckDBInstance, type DuckDBPreparedStatement } from "@duckdb/node-api";

/**
 * DuckDB's parser for a buyer's text (a `where`, a SQL query): `json_serialize_sql` of it, bound
 * as a parameter, on an instance of the engine process's own that holds no table and reads no
 * file (external access off, configuration locked before any text comes). One statement, prepared
 * once and bound again for each text: about 0.3 ms a parse, where a statement prepared on each
 * task's new connection took 1.0 ms (docs/benchmarks.md, "Fixed costs measured one by one").
 * Texts are parsed one at a time (a prepared statement holds one binding). The last text's parse is
 * kept: a SQL query's text is asked for three times in a row (its files narrowed, its check, its
 * rendering), and the process runs one task at a time. One only: a 100 KB text's parse can be 4 MB.
 */
type Parser = { statement: DuckDBPreparedStatement };

let opened: Promise<Parser> | undefined;
let queue: Promise<unknown> = Promise.resolve();
let last: { sql: string; parse: Promise<string> } | undefined;

/** DuckDB's parse of `sql` as JSON text: its statements' trees, or an `error` object for anything but SELECT. */
export function serializedSql(sql: string): Promise<string> {
  if (last?.sql === sql) return last.parse;
  const parse = queue.then(async () => {
    const { statement } = await parser();
    statement.bindVarchar(1, sql);
    const result = await statement.runAndReadAll();
    return String(result.getRows()[0]?.[0] ?? "");
  });
  queue = parse.catch(() => undefined);
  const kept = { sql, parse };
  last = kept;
  parse.catch(() => {
    if (last === kept) last = undefined;
  });
  return parse;
}

/** The process's parser, opened on first use; a failed opening is tried again by the next text. */
function parser(): Promise<Parser> {
  opened ??= openParser().catch((error: unknown) => {
    opened = undefined;
    throw error;
  });
  return opened;
}

async function openParser(): Promise<Parser> {
  const instance = await DuckDBInstance.create(":memory:", {
    threads: "1",
    memory_limit: "256MB",
    autoinstall_known_extensions: "false",
    autoload_known_extensions: "false",
    allow_community_extensions: "false",
  });
  const connection = await instance.connect();
  try {
    await connection.run("SET enable_external_access = false");
    await connection.run("SET lock_configuration = true");
    return { statement: await connection.prepare("SELECT json_serialize_sql($1::VARCHAR)") };
  } catch (error) {
    connection.closeSync();
    instance.closeSync();
    throw error;
  }
}
