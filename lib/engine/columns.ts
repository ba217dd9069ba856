/** A column as the engine reads it from a file: its name, DuckDB type and whether it holds nulls. */
export type Column = { name: string; type: string; nullable: boolean };
