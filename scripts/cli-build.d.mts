/** The build of the operator CLI (scripts/cli-build.mjs). */
export type CliBuild = { dir: string; startedAt: number; inputs: string[] };
/** Why the build must be made again, or undefined when none of its inputs changed since it started. */
export function staleReason(build: CliBuild | undefined): string | undefined;
/** Bundles the CLI and makes it the current build; returns its entry file. */
export function buildCli(): Promise<string>;
/** The entry of a fresh build, made now if missing or stale. */
export function freshCli(): Promise<string>;
