import type { components } from "./generated/api.js";

/** A table's data contract (contract Part 9): the Open Data Contract Standard v3.1.0 document, as JSON gives it. */
export type DataContract = components["schemas"]["DataContract"];

/** The media types the contract is served in: YAML, the API's default, and JSON. */
const YAML = "application/yaml";
const JSON_TYPE = "application/json";

/**
 * A table's data contract, made by the server from what the table is now (its columns and key, the
 * data dictionary, the quality checks, the cadence). `getText` is the client's own GET (retries,
 * pacing, typed problems) answering the body in the type asked for; `tableUrl` a table's URL.
 */
export function contractMethods(
  getText: (url: string, accept: string) => Promise<string>,
  tableUrl: (orderId: string, table: string) => string,
) {
  const contractUrl = (orderId: string, table: string) => `${tableUrl(orderId, table)}/contract`;

  /** The contract as the parsed JSON document, typed from the API's OpenAPI description. */
  async function contract(orderId: string, table: string): Promise<DataContract> {
    return JSON.parse(await getText(contractUrl(orderId, table), JSON_TYPE)) as DataContract;
  }

  /** The contract as the server's YAML text, unchanged (to keep beside the data, or hand to ODCS tools). */
  function contractYaml(orderId: string, table: string): Promise<string> {
    return getText(contractUrl(orderId, table), YAML);
  }

  return { contract, contractYaml };
}
