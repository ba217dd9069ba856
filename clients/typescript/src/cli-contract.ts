import type { DatasetAccessClient } from "./client.js";
import { textForTerminal } from "./terminal.js";
import { UsageError } from "./usage.js";

/**
 * `dataset-access contract`: the table's data contract, the server's YAML as it is, or with
 * `--json` the JSON document as the other commands print JSON. YAML also off a terminal (unlike
 * the reports, JSON only when asked): `> contract.yaml` gets the file the server serves. On a
 * terminal its control characters are escaped, like every server string.
 */
export async function contractCommand(
  client: DatasetAccessClient,
  values: { order?: string; table?: string; json?: boolean },
): Promise<number> {
  const { order, table } = values;
  if (!order || !table) throw new UsageError("contract needs --order ID --table NAME.");
  if (values.json) console.log(JSON.stringify(await client.tables.contract(order, table), null, 2));
  else {
    const yaml = await client.tables.contractYaml(order, table);
    process.stdout.write(process.stdout.isTTY ? textForTerminal(yaml) : yaml);
  }
  return 0;
}
