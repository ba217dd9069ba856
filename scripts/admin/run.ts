import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { z } from "zod";
import { disconnectDb } from "../../lib/db/client";
import { prepareDatabase } from "../../lib/db/runtime";
import { closeEnginePool } from "../../lib/engine/engine-pool";
import { AppError } from "../../lib/errors";
import { logToStderr } from "../../lib/log";
import { closeJobQueue } from "../../lib/queue";
import { interruption, PartialFailure, type Command } from "./command";
import type { COMMANDS } from "./commands";

/** The shell's code for a command ended by Ctrl+C. */
const INTERRUPTED_EXIT_CODE = 130;

/** A boolean option (`--dry-run`) rather than one that takes a value. */
function isFlag(schema: z.ZodType | undefined): boolean {
  const inner = schema instanceof z.ZodOptional ? schema.unwrap() : schema;
  return inner instanceof z.ZodBoolean;
}

/** An option given as often as needed (`--path A --path B`, or `--path A B` as a shell glob expands). */
function isRepeatable(schema: z.ZodType | undefined): boolean {
  const inner = schema instanceof z.ZodOptional ? schema.unwrap() : schema;
  return inner instanceof z.ZodArray;
}

/**
 * The options of `args` by name. Plain arguments are taken only right after a repeatable option's value, as more
 * values of it (`--path data/*.csv`); anywhere else they are refused.
 */
function parseOptions(args: string[], { options, groups }: Command): Record<string, unknown> {
  const grouped = new Set(groups ? [groups.by, ...groups.members] : []);
  const names = [...Object.keys(options.shape).filter((name) => !grouped.has(name)), ...grouped];
  const { values, tokens } = parseArgs({
    args,
    options: Object.fromEntries([
      ...names.map((option) => [
        option,
        isFlag(options.shape[option])
          ? { type: "boolean" }
          : { type: "string", multiple: grouped.has(option) || isRepeatable(options.shape[option]) },
      ]),
      ["json", { type: "boolean" }],
    ]),
    strict: true,
    allowPositionals: true,
    tokens: true,
  });
  const raw: Record<string, unknown> = { ...values };
  // A repeatable option's values are collected again from the tokens, in the order given.
  const repeated: Record<string, string[]> = {};
  let current: string[] | undefined;
  for (const token of tokens) {
    if (token.kind === "option" && grouped.has(token.name)) {
      current = undefined;
    } else if (token.kind === "option") {
      current = isRepeatable(options.shape[token.name]) ? (repeated[token.name] ??= []) : undefined;
      current?.push(token.value!);
    } else if (token.kind === "positional" && current !== undefined) {
      current.push(token.value);
    } else if (token.kind === "positional") {
      throw new Error(`Unexpected argument '${token.value}'.`);
    }
  }
  Object.assign(raw, repeated);
  delete raw.json;
  if (groups) Object.assign(raw, groupOptions(tokens, groups, raw));
  return raw;
}

/** The grouped options in the order given (see OptionGroups), each at most once per group. */
function groupOptions(
  tokens: NonNullable<ReturnType<typeof parseArgs>["tokens"]>,
  { by, members, leading }: NonNullable<Command["groups"]>,
  raw: Record<string, unknown>,
): Record<string, unknown> {
  for (const member of [by, ...members]) delete raw[member];
  const lead: Record<string, string> = {};
  const list: Record<string, string>[] = [];
  for (const token of tokens) {
    if (token.kind !== "option") continue;
    if (token.name === by) {
      list.push({ name: token.value! });
      continue;
    }
    if (!members.includes(token.name)) continue;
    const group = list.at(-1);
    if (!group && !leading.includes(token.name)) {
      throw new Error(`--${token.name} belongs to a --${by}: give it after --${by} NAME.`);
    }
    const target = group ?? lead;
    if (target[token.name] !== undefined) {
      throw new Error(`--${token.name} is given twice for ${group ? `--${by} ${group.name}` : "the command"}.`);
    }
    target[token.name] = token.value!;
  }
  return { ...lead, ...(list.length ? { [by]: list } : {}) };
}

/**
 * With CLI_START_CPU_FILE set, writes there the CPU-seconds (user + system) this process spent before the command's
 * own work: what bench/cli-start.ts measures.
 */
function reportStartCpu(): void {
  const file = process.env.CLI_START_CPU_FILE;
  if (!file) return;
  const { user, system } = process.cpuUsage();
  writeFileSync(file, String((user + system) / 1e6));
}

/** Parses a command's options, runs it against the database and prints its answer; returns the exit code. */
export async function runCommand(
  name: string,
  { usage, group }: (typeof COMMANDS)[string],
  args: string[],
): Promise<number> {
  logToStderr();
  const json = args.includes("--json");
  const fail = (code: string, message: string) => {
    if (json) console.log(JSON.stringify({ error: { code, message } }));
    console.error(`error: ${message}`);
    return 1;
  };
  const definition = (await group()).commands[name]!;
  let raw: Record<string, unknown>;
  try {
    raw = parseOptions(args, definition);
  } catch (error) {
    return fail("invalid_argument", `${(error as Error).message}\nUsage: npm run admin -- ${name} ${usage}`);
  }
  const parsed = definition.options.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const option = `--${issue.path.join(".")}`;
      return issue.code !== "custom" && raw[String(issue.path[0])] === undefined
        ? `${option} is required`
        : `${option}: ${issue.message}`;
    });
    return fail("invalid_argument", `${problems.join("; ")}.\nUsage: npm run admin -- ${name} ${usage}`);
  }

  // Ctrl+C or a stop signal interrupts a transfer cleanly (an upload is aborted, nothing is recorded).
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => interruption.abort());
  let database: Awaited<ReturnType<typeof prepareDatabase>> | undefined;
  try {
    database = await prepareDatabase();
    reportStartCpu();
    const output = await definition.run(parsed.data as never);
    console.log(json ? JSON.stringify(output.json) : output.text);
    return 0;
  } catch (error) {
    if (error instanceof PartialFailure) {
      console.log(json ? JSON.stringify(error.output.json) : error.output.text);
      console.error(`error: ${error.message}`);
      return 1;
    }
    if (error instanceof AppError) {
      const code = fail(error.code, error.message);
      return error.code === "upload_interrupted" ? INTERRUPTED_EXIT_CODE : code;
    }
    return fail("internal_error", `Unexpected failure: ${(error as Error).message}`);
  } finally {
    await closeJobQueue();
    await closeEnginePool();
    await disconnectDb();
    await database?.stop();
  }
}
