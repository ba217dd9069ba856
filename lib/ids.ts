/**
 * Ids are typed and unguessable: `<prefix>_` + 32 lower-case hex characters (the SQL function
 * typed_id()). Anything else cannot name a row, so it is refused before any query: a NUL byte, an
 * overlong or non-ASCII value never reaches PostgreSQL.
 */
export type IdPrefix =
  "usr" | "ord" | "fil" | "key" | "shr" | "whe" | "msg" | "exd" | "exr" | "pub" | "tnt" | "qry" | "sub";

const TYPED_ID = /^([a-z]{3})_[0-9a-f]{32}$/;

export function isTypedId(prefix: IdPrefix, value: unknown): value is string {
  if (typeof value !== "string") return false;
  const match = TYPED_ID.exec(value);
  return match?.[1] === prefix;
}

/** The id for a message: as given when well formed; a malformed one is not echoed back. */
export function describeId(prefix: IdPrefix, value: string): string {
  return isTypedId(prefix, value) ? value : "with that id";
}
