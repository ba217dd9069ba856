import type { Command } from "./command";

/**
 * Every command of the operator CLI: its usage line, and the module of its group, imported only when one of its
 * commands runs. So `--help` loads nothing more, and `key:revoke` never loads DuckDB or the AWS SDK: each group
 * module imports what its own commands use (issue #38: the CLI's start under 0.3 CPU-seconds).
 */
type Group = () => Promise<{ commands: Record<string, Command> }>;

const orders: Group = () => import("./orders");
const tables: Group = () => import("./tables");
const keys: Group = () => import("./keys");
const social: Group = () => import("./social");
const storage: Group = () => import("./storage");
const exports: Group = () => import("./exports");

export const COMMANDS: Record<string, { usage: string; group: Group }> = {
  "buyer:create": { usage: "--email E", group: orders },
  "order:create": { usage: "--email E --name N [--status unfinished|delivered|refunded]", group: orders },
  "order:add-file": {
    usage: "--order ID (--path FILE... | --from s3://BUCKET/KEY) [--name NAME] [--content-type T] [--table NAME]",
    group: orders,
  },
  "table:publish": {
    usage:
      "--order ID --table NAME (--path FILE | --from s3://BUCKET/KEY)... [--mode snapshot|append] [--key COL[,COL...]]",
    group: tables,
  },
  "table:versions": { usage: "--order ID --table NAME", group: tables },
  "table:prune": { usage: "--order ID --table NAME --keep N", group: tables },
  "table:checks": { usage: "--order ID --table NAME [--set name=threshold[:hold|warn|off] ...]", group: tables },
  "table:release": { usage: "--publication ID --reason TEXT", group: tables },
  "table:reject": { usage: "--publication ID --reason TEXT", group: tables },
  "table:notice": {
    usage: "--order ID --table NAME --type schema_change|delay|deprecation --message TEXT [--effective-at ISO]",
    group: tables,
  },
  "table:describe": {
    usage:
      "--order ID --table NAME [--description TEXT] [--column NAME [--description TEXT] [--unit U] [--example V]]... [--file F.json|F.yaml]",
    group: tables,
  },
  "table:cadence": { usage: "--order ID --table NAME (--every DURATION [--grace DURATION] | --none)", group: tables },
  "files:profile": { usage: "(--order ID | --all)", group: orders },
  "storage:migrate": { usage: "--to s3 [--dry-run] [--keep-local]", group: storage },
  "order:set-status": { usage: "--order ID --status delivered|refunded|unfinished", group: orders },
  "key:create": {
    usage: "--email E --name N --permission datasets:read|scrape:read --expires-days 30|90|365",
    group: keys,
  },
  "key:revoke": { usage: "--id ID", group: keys },
  "social:enable": { usage: "--email E --allowance N --rate-per-minute M", group: social },
  "social:disable": { usage: "--email E", group: social },
  "social:import": { usage: "--path FILE.ndjson", group: social },
  "social:platform": { usage: "--platform P --available true|false [--retry-after SECONDS]", group: social },
  "export:destination": {
    usage:
      "--email E --name N --type s3|azure|sftp --config FILE.json [--orders all|ID,ID] [--format original|parquet|csv|jsonl] [--template T] [--approval none|on_warning]",
    group: exports,
  },
  "export:test": { usage: "--destination ID", group: exports },
  "export:run": { usage: "--order ID [--destination ID] [--wait]", group: exports },
};
