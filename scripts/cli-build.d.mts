/** The build of the scripts (scripts/cli-build.mjs). */
export type CliBuild = { dir: string; startedAt: number; inputs: string[] };
/** Where V8's compiled code of the built scripts is kept. */
export const COMPILE_CACHE: string;
/** The scripts built, by the name of their entry file, and the source each is built from. */
export const BUILT_SCRIPTS: Record<string, string>;
/** Why the build must be made again, or undefined when none of its inputs changed since it started. */
export function staleReason(build: CliBuild | undefined): string | undefined;
/** Bundles the scripts and makes it the current build; returns its folder. */
export function buildScripts(): Promise<string>;
/** The entry file of a script in a fresh build, made now if missing or stale. */
export function freshEntry(name: string): Promise<string>;
