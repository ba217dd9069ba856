import { CONTROL_CHARACTERS } from "../contract";

/**
 * Where each exported file lands: a key template of `{placeholder}`s and literal text, split into
 * segments by `/`. The contract's default is `{order_id}/{table}/v{version}/{file_name}`; a file that
 * belongs to no table has no `{table}` or `{version}`, so for it every segment that uses either is
 * left out (the default becomes `{order_id}/{file_name}`, as the contract says for tableless files,
 * and a custom template follows the same rule). A template is refused when it could make `..`, an
 * absolute path or an empty segment, or when two files of one order could land on one key.
 */

export const KEY_PLACEHOLDERS = ["order_id", "order_name", "table", "version", "file_name", "file_id", "date"] as const;
export type KeyPlaceholder = (typeof KEY_PLACEHOLDERS)[number];

export const DEFAULT_KEY_TEMPLATE = "{order_id}/{table}/v{version}/{file_name}";
export const KEY_TEMPLATE_MAX_LENGTH = 500;

/** The values of one file's key: `table` and `version` are undefined for a file in no table. */
export type KeyValues = Record<Exclude<KeyPlaceholder, "table" | "version">, string> & {
  table?: string;
  version?: number;
};

type Part = { text: string } | { placeholder: KeyPlaceholder };
type Segment = Part[];

const PLACEHOLDER = /\{([^{}]*)\}/g;

/** The template's segments, or a sentence saying why it is refused. */
export function parseKeyTemplate(template: string): { segments: Segment[] } | { problem: string } {
  if (!template) return { problem: "The key template is empty." };
  if (template.length > KEY_TEMPLATE_MAX_LENGTH) {
    return { problem: `The key template is longer than ${KEY_TEMPLATE_MAX_LENGTH} characters.` };
  }
  if (CONTROL_CHARACTERS.test(template)) return { problem: "The key template contains control characters." };
  if (template.includes("\\")) return { problem: "The key template contains a backslash: separate folders with /." };
  if (template.startsWith("/")) return { problem: "The key template starts with /: keys are relative to the prefix." };
  const segments: Segment[] = [];
  for (const raw of template.split("/")) {
    if (raw === "") return { problem: "The key template has an empty folder name (// or a / at its end)." };
    if (raw === "." || raw === "..") return { problem: `The key template has a "${raw}" folder.` };
    const parts: Part[] = [];
    let at = 0;
    for (const match of raw.matchAll(PLACEHOLDER)) {
      if (match.index > at) parts.push({ text: raw.slice(at, match.index) });
      const name = match[1]!;
      if (!(KEY_PLACEHOLDERS as readonly string[]).includes(name)) {
        return { problem: `{${name}} is not a placeholder; use ${KEY_PLACEHOLDERS.map((p) => `{${p}}`).join(", ")}.` };
      }
      parts.push({ placeholder: name as KeyPlaceholder });
      at = match.index + match[0].length;
    }
    if (at < raw.length) parts.push({ text: raw.slice(at) });
    if (parts.some((part) => "text" in part && /[{}]/.test(part.text))) {
      return { problem: "The key template has an unmatched { or }." };
    }
    segments.push(parts);
  }
  const last = segments[segments.length - 1]!;
  if (
    !last.some((part) => "placeholder" in part && (part.placeholder === "file_name" || part.placeholder === "file_id"))
  ) {
    return {
      problem: "The key template must end in {file_name} or {file_id}, or every file of an order lands on one key.",
    };
  }
  return { segments };
}

/** Why a template is refused, or undefined. */
export function keyTemplateProblem(template: string): string | undefined {
  const parsed = parseKeyTemplate(template);
  return "problem" in parsed ? parsed.problem : undefined;
}

/**
 * One value made safe as (part of) a folder or file name: a separator or control character becomes
 * `_`, and so does a value that is empty, `.` or `..`.
 */
export function keySafe(value: string): string {
  const cleaned = value.replace(/[/\\]/g, "_").replace(/\p{Cc}/gu, "_");
  return cleaned === "" || cleaned === "." || cleaned === ".." ? "_" : cleaned;
}

/** The key of one file under `template` (already checked by parseKeyTemplate). */
export function renderKey(template: string, values: KeyValues): string {
  const parsed = parseKeyTemplate(template);
  if ("problem" in parsed) throw new Error(parsed.problem);
  const inTable = values.table !== undefined;
  const segments: string[] = [];
  for (const segment of parsed.segments) {
    const usesTable = segment.some(
      (part) => "placeholder" in part && (part.placeholder === "table" || part.placeholder === "version"),
    );
    if (usesTable && !inTable) continue;
    const text = segment
      .map((part) => ("text" in part ? part.text : keySafe(String(values[part.placeholder] ?? ""))))
      .join("");
    // Literal text beside a value can still spell "." or ".." ("{order_name}." with a name "."): never a folder.
    segments.push(text === "." || text === ".." ? "_" : text);
  }
  return segments.join("/");
}

/**
 * Where a run's manifest goes when the run has no files to share a folder: the template's folders
 * up to the first made of a file's name or id, rendered for the run (`{order_id}` for the default,
 * or `{order_id}/{table}/v{version}` for a table version's run), so runs of other orders never meet.
 */
export function runFolder(template: string, values: Omit<KeyValues, "file_name" | "file_id">): string {
  const folders: string[] = [];
  for (const raw of template.split("/").slice(0, -1)) {
    if (/\{file_(name|id)\}/.test(raw)) break;
    folders.push(raw);
  }
  const key = renderKey([...folders, "{file_name}"].join("/"), { ...values, file_name: "_", file_id: "_" });
  return key.split("/").slice(0, -1).join("/");
}

/** A destination's key prefix (an S3 or Azure prefix, within the SFTP directory): folders, no `..`, no leading /. */
export function prefixProblem(prefix: string): string | undefined {
  if (prefix === "") return undefined;
  if (CONTROL_CHARACTERS.test(prefix) || prefix.includes("\\"))
    return "The prefix contains a backslash or control characters.";
  if (prefix.startsWith("/")) return "The prefix starts with /: leave the leading / out.";
  const segments = prefix.replace(/\/$/, "").split("/");
  if (segments.some((segment) => segment === "" || segment === "." || segment === "..")) {
    return "The prefix has an empty, . or .. folder name.";
  }
  return undefined;
}

/** `key` under `prefix` (a prefix ending in / or not means the same folder). */
export function withPrefix(prefix: string, key: string): string {
  if (!prefix) return key;
  return `${prefix.replace(/\/$/, "")}/${key}`;
}

/** The folder all `keys` share (without a trailing /), "" when they share none: where the run's manifest goes. */
export function commonFolder(keys: string[]): string {
  if (keys.length === 0) return "";
  const folders = keys.map((key) => key.split("/").slice(0, -1));
  const shared: string[] = [];
  for (let i = 0; ; i++) {
    const segment = folders[0]![i];
    if (segment === undefined || !folders.every((folder) => folder[i] === segment)) break;
    shared.push(segment);
  }
  return shared.join("/");
}
