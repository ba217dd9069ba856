/** Pure HTTP helpers of the download endpoint (RFC 9110 ranges and conditionals, RFC 6266 names). */

export type RangeResult =
  { type: "full" } | { type: "partial"; start: number; end: number } | { type: "unsatisfiable" };

const SINGLE_RANGE = /^bytes=[ \t]*(\d*)-(\d*)[ \t]*$/i;

/**
 * The part of a `size`-byte file a Range header asks for. Only one range is served: several
 * ranges, a malformed header or an invalid one (last < first) mean the whole file, which RFC 9110
 * (section 14.2) allows; a well-formed range that starts past the end is unsatisfiable (416).
 */
export function parseRange(header: string | null, size: number): RangeResult {
  const match = header === null ? null : SINGLE_RANGE.exec(header.trim());
  if (!match) return { type: "full" };
  const [, first = "", last = ""] = match;
  if (first === "" && last === "") return { type: "full" };

  if (first === "") {
    const suffix = Number(last);
    if (suffix === 0) return { type: "unsatisfiable" };
    // An empty file has no bytes to address; a non-zero suffix of it is the whole (empty) file.
    if (size === 0) return { type: "full" };
    return { type: "partial", start: Math.max(0, size - suffix), end: size - 1 };
  }

  const start = Number(first);
  const end = last === "" ? Infinity : Number(last);
  if (end < start) return { type: "full" };
  if (start >= size) return { type: "unsatisfiable" };
  return { type: "partial", start, end: Math.min(end, size - 1) };
}

/**
 * Whether a conditional GET/HEAD can be answered 304. If-None-Match uses weak comparison and `*`
 * matches any existing file; If-Modified-Since counts only without If-None-Match (RFC 9110 13.1.3).
 */
export function notModified(headers: Headers, etag: string, lastModified: Date): boolean {
  const ifNoneMatch = headers.get("if-none-match");
  if (ifNoneMatch !== null) {
    return ifNoneMatch.split(",").some((candidate) => {
      const tag = candidate.trim();
      return tag === "*" || withoutWeakPrefix(tag) === etag;
    });
  }
  const since = Date.parse(headers.get("if-modified-since") ?? "");
  // HTTP dates have whole seconds, so compare at that precision.
  return !Number.isNaN(since) && Math.floor(lastModified.getTime() / 1000) * 1000 <= since;
}

function withoutWeakPrefix(tag: string): string {
  return tag.startsWith("W/") ? tag.slice(2) : tag;
}

/**
 * Whether a Range may be honoured under If-Range: only when the client's copy is this exact file,
 * by strong comparison with the ETag. A date is treated as a mismatch (full file), the safe reading.
 */
export function ifRangeAllows(ifRange: string | null, etag: string): boolean {
  return ifRange === null || ifRange.trim() === etag;
}

/**
 * A Content-Disposition that saves the file under its own name: a plain ASCII `filename` for old
 * clients and the exact UTF-8 name in `filename*` (RFC 6266, RFC 8187). Quotes, backslashes and
 * control characters never reach the header, so a name cannot break out of the parameter; `%` is
 * replaced in the fallback because some browsers percent-decode it.
 */
export function contentDisposition(name: string): string {
  const safe = name.replace(/[\u0000-\u001f\u007f-\u009f]/g, "_");
  const fallback = safe.replace(/[^\x20-\x7e]|["\\%]/g, "_");
  const encoded = encodeURIComponent(safe).replace(
    /['()*]/g,
    (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}
