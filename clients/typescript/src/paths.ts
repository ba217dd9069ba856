import { promises as fs } from "node:fs";
import path from "node:path";
import { UnsafeResponseError } from "./errors.js";

/*
 * Every id and file name in a server's answer is treated as hostile: a server that is not the real
 * one must not make the client write or delete anything outside the directory it was given. An
 * unsafe name is refused, never rewritten into another name that could collide with a real one.
 */

/** The API's ids (lib/ids.ts): a typed prefix, `_`, 32 lower-case hex digits. */
const ORDER_ID = /^ord_[0-9a-f]{32}$/;
const FILE_ID = /^fil_[0-9a-f]{32}$/;

/** The longest name whose `<name>.part.etag` still fits the 255 bytes file systems allow a name. */
export const MAX_NAME_BYTES = 255 - ".part.etag".length;

// C0, DEL and C1: a NUL cuts a path short, the others can drive a terminal.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
// Half a surrogate pair is no character: Node writes it as U+FFFD, so two such names would meet.
const LONE_SURROGATE = /[\ud800-\udfff]/u;

export function orderIdProblem(id: unknown): string | undefined {
  return typeof id === "string" && ORDER_ID.test(id) ? undefined : "not an order id (ord_ and 32 hex digits)";
}

function fileIdProblem(id: unknown): string | undefined {
  return typeof id === "string" && FILE_ID.test(id) ? undefined : "not a file id (fil_ and 32 hex digits)";
}

/** Why `name` cannot name a file inside a directory, or undefined when it can. */
export function nameProblem(name: unknown): string | undefined {
  if (typeof name !== "string") return "the name is not a string";
  if (name === "") return "the name is empty";
  if (name === "." || name === "..") return `the name is "${name}"`;
  if (/[/\\]/.test(name)) return "the name contains a path separator (/ or \\)";
  if (CONTROL.test(name)) return "the name contains a control character";
  if (LONE_SURROGATE.test(name)) return "the name is not valid Unicode";
  if (Buffer.byteLength(name) > MAX_NAME_BYTES) return `the name is longer than ${MAX_NAME_BYTES} bytes`;
  return undefined;
}

/**
 * The names taken in one directory: each file's and its partial download's, letter case aside (the
 * file systems of macOS and Windows ignore it). A second file of a taken name is refused rather
 * than written over the first.
 */
export class DirectoryNames {
  private readonly taken = new Set<string>();

  /** Takes `name`, `name.part` and `name.part.etag`, or answers why it cannot. */
  claim(name: string): string | undefined {
    const names = [name, `${name}.part`, `${name}.part.etag`].map((each) => each.toLowerCase());
    if (names.some((each) => this.taken.has(each)))
      return "another file here has the same name, or this name is its partial download's";
    for (const each of names) this.taken.add(each);
    return undefined;
  }
}

/** Why a file of the server's answer cannot be written anywhere (its id or name is unsafe), or undefined. */
export function unsafeFileProblem(file: { id: unknown; name: unknown }): string | undefined {
  return fileIdProblem(file.id) ?? nameProblem(file.name);
}

/** The real path of the directory everything goes into, created if need be. */
export async function targetDirectory(dir: string): Promise<string> {
  await fs.mkdir(dir, { recursive: true });
  return fs.realpath(dir);
}

function absentAsUndefined(error: NodeJS.ErrnoException): undefined {
  if (error.code === "ENOENT" || error.code === "ENOTDIR") return undefined;
  throw error;
}

/**
 * `root/name/...` once it is sure to stay inside `root` (a real path, see targetDirectory): each
 * name safe, and nothing on the way below root a symbolic link (which could lead anywhere). Checked
 * before anything there is created, written or deleted; throws UnsafeResponseError otherwise.
 */
export async function pathInside(root: string, ...names: string[]): Promise<string> {
  let current = root;
  for (const name of names) {
    const problem = nameProblem(name);
    if (problem) throw new UnsafeResponseError(problem);
    current = path.join(current, name);
    const stat = await fs.lstat(current).catch(absentAsUndefined);
    if (stat?.isSymbolicLink()) {
      throw new UnsafeResponseError(
        `${path.relative(root, current)} is a symbolic link: nothing is written or deleted through one`,
      );
    }
  }
  return current;
}
