import { CURL, RETRY_ON_202_NOTE } from "@/lib/docs/commands";
import { exampleSignedLink, type ApiExamples } from "@/lib/docs/examples";
import { SUBSET_RETRY_AFTER_SECONDS } from "@/lib/explore/subsets";
import { TABLE_EXAMPLE, type TableExamples } from "@/lib/docs/table-examples";

/** A curl command, one option per line so that it reads (and fits) on a narrow screen. */
export const curl = (first: string, ...rest: string[]) => [`${CURL} ${first}`, ...rest].join(" \\\n  ");
export const AUTH = `-H "Authorization: Bearer $DATASET_ACCESS_KEY"`;

/** `--get` with each query parameter URL-encoded by curl: the query as a reader writes it, not percent-encoded. */
const getWith = (url: string, query: Record<string, string>) => [
  `--get "${url}"`,
  ...Object.entries(query).map(([name, value]) => `--data-urlencode ${JSON.stringify(`${name}=${value}`)}`),
];

const origin = (api: string) => api.replace(/\/api\/v1$/, "");
const withoutQuery = (path: string) => path.split("?")[0]!;

/** An endpoint's example: the path it calls (for the page's data attribute), the request, and the answer shown. */
export type Example = { path: string; request: string; response?: string; responseLabel: string };

export function exampleFor(id: string, examples: ApiExamples, api: string): Example | undefined {
  const table = tableExampleFor(id, examples.tables, api);
  if (table) return table;
  switch (id) {
    case "listOrders":
      return {
        path: examples.listOrders.path,
        request: `${curl(AUTH, `"${api}${examples.listOrders.path}"`)}\n# next page: the same with &offset=<next_offset>, until next_offset is null`,
        response: examples.listOrders.body,
        responseLabel: "200 response",
      };
    case "getOrder":
      return {
        path: examples.getOrder.path,
        request: curl(AUTH, `${api}${examples.getOrder.path}`),
        response: examples.getOrder.body,
        responseLabel: "200 response",
      };
    case "downloadFile":
      return {
        path: examples.downloadFile.path,
        request: [
          `# -L follows the redirect; -OJ saves under the file's own name (${examples.downloadFile.fileName})`,
          curl("-L -OJ", AUTH, `${api}${examples.downloadFile.path}`),
          `# interrupted? the same with -C - -o ${examples.downloadFile.fileName} continues where the file on disk stops`,
          "# the same data as Parquet (or csv, jsonl): 202 with Retry-After while it is made, then the same 302",
          curl("-L -OJ", AUTH, `"${api}${examples.downloadFile.path}?format=parquet"`),
          RETRY_ON_202_NOTE,
        ].join("\n"),
        response: `HTTP/1.1 302 Found\nLocation: ${exampleSignedLink(origin(api))}\nCache-Control: private, no-store`,
        responseLabel: "302 response (headers)",
      };
    case "previewFile":
      return {
        path: examples.previewFile.path,
        request: curl(AUTH, `"${api}${examples.previewFile.path}"`),
        response: examples.previewFile.body,
        responseLabel: "200 response",
      };
    case "getSocialProfile":
      return {
        path: examples.getSocialProfile.path,
        request: curl(`-H "Authorization: Bearer $SOCIAL_KEY"`, `"${api}${examples.getSocialProfile.path}"`),
        response: examples.getSocialProfile.body,
        responseLabel: "200 response",
      };
    default:
      return undefined;
  }
}

/** The table endpoints' examples: the demo's refreshed price list and its product list. */
function tableExampleFor(id: string, tables: TableExamples, api: string): Example | undefined {
  const json = (key: keyof TableExamples, request: string): Example => ({
    path: tables[key].path,
    request,
    response: tables[key].body,
    responseLabel: "200 response",
  });
  switch (id) {
    case "getTable":
    case "listVersions":
    case "getVersion":
    case "getVersionQuality":
      return json(id, curl(AUTH, `"${api}${tables[id].path}"`));
    case "readTableRows":
      return json(id, curl(AUTH, ...getWith(`${api}${withoutQuery(tables.readTableRows.path)}`, TABLE_EXAMPLE.rows)));
    case "runOrderSql":
      return json(id, curl(AUTH, ...getWith(`${api}${withoutQuery(tables.runOrderSql.path)}`, TABLE_EXAMPLE.sql)));
    case "getTableContract":
      return {
        path: tables.getTableContract.path,
        request: [
          '# YAML by default; add -H "Accept: application/json" for JSON',
          curl(AUTH, `"${api}${tables.getTableContract.path}"`, "-o weekly_prices.odcs.yaml"),
        ].join("\n"),
        response: tables.getTableContract.body,
        responseLabel: "200 response (application/yaml)",
      };
    case "downloadChanges":
      return {
        path: tables.downloadChanges.path,
        request: [
          "# the columns plus _change_type (insert, delete, update_preimage, update_postimage), as Parquet",
          curl("-L", AUTH, `"${api}${tables.downloadChanges.path}"`, "-o changes.parquet"),
        ].join("\n"),
        response: `HTTP/1.1 302 Found\nLocation: ${exampleSignedLink(origin(api))}`,
        responseLabel: "302 response (headers)",
      };
    case "downloadTableSubset":
      return {
        path: tables.downloadTableSubset.path,
        request: [
          `URL="${api}${tables.downloadTableSubset.path}"`,
          "# 202 while the file is made: ask again after Retry-After seconds, until the 302",
          `while code=$(${CURL} -s -o /dev/null -w '%{http_code}' ${AUTH} "$URL") &&`,
          '  [ "$code" = 202 ]; do sleep 5; done',
          curl("-L", AUTH, '"$URL"', "-o subset.csv"),
        ].join("\n"),
        response: `HTTP/1.1 202 Accepted\nRetry-After: ${SUBSET_RETRY_AFTER_SECONDS}\n\n# once made:\nHTTP/1.1 302 Found\nLocation: ${exampleSignedLink(origin(api))}`,
        responseLabel: "202, then 302 responses (headers)",
      };
    default:
      return undefined;
  }
}
