/** The command's help, as `dataset-access --help` prints it (the README lists the same commands). */
export const USAGE = `Usage: dataset-access <command> [options]

Commands:
  orders                      list your paid orders
  download ORDER [FILE]       download one file (id or name) or every file of an order
  sync --dir D                mirror every delivered order's files into D/<order id>/<file name>
  tables --order ID           list an order's tables: name, mode, key, version, rows, updated
  changes --order ID --table NAME --since N --dir D
                              fetch the change files of the versions after N into
                              D/<table>.v<version>.changes.<format>; prints the last version
                              written (the --since of the next run). Stops before the first
                              version whose quality is not passed, unless --accept-warnings
  quality --order ID --table NAME [--version N]
                              a version's quality report (default: the current version)
  contract --order ID --table NAME [--json]
                              the table's data contract (ODCS v3.1.0: columns, key,
                              descriptions, quality checks, cadence) as YAML, or as JSON
  rows --order ID --table NAME [--version N] [--columns a,b] [--where EXPR]
       [--order-by "col [asc|desc],..."] [--limit N] [--offset N] [--all]
                              a table's rows, filtered on the server (--all: every
                              page from --offset on, --limit rows a page)
  sql --order ID --query "SELECT ..." [--limit N]
                              one read-only SELECT over the order's tables ("name",
                              "name@N", "name@changes"); at most --limit rows (1-1000)

Options:
  --dir D               where files go (download: default ., sync: required)
  --format F            each data file as parquet, csv or jsonl (products.csv -> products.parquet),
                        verified by that rendition's sha256; a file already in F comes as it is;
                        binary or unreadable files have none and are listed under no_rendition.
                        changes: the change files' format (default parquet)
  --rendition-wait S    how long to wait for a rendition the server is still making, per file
                        (default 600 seconds); then that file has failed
  --concurrency N       sync: files fetched at once (default 4)
  --delete              sync: remove the local copies of refunded orders, and the files
                        that left a delivered order's list (a new snapshot version's old parts)
  --accept-warnings     changes: apply versions whose quality is warned or released too
  --json                print a JSON report on stdout (the default when stdout is not a terminal;
                        contract: its JSON document, YAML without --json)
  --csv                 rows, sql: print the rows as CSV (a header line, then one line a row)
  -h, --help            this help
  -V, --version         the command's version

Environment: DATASET_ACCESS_KEY (an API key with datasets:read), DATASET_ACCESS_URL (the server).
Exit codes: 0 done; 1 some files failed, or were refused as unsafe (see the report), or the one
FILE named has no rendition in F, or changes stopped before a version not passed; 2 usage; 3 refused by the API; 4 network.`;

/** What a command line the command cannot run gets after its one line of error (the help is --help's). */
export const USAGE_LINE = "Usage: dataset-access <command> [options] (dataset-access --help lists them)";

/** A command line the command cannot run: its message, then USAGE_LINE, exit code 2. */
export class UsageError extends Error {}
