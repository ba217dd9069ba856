import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";

/** The reference Delta Sharing client's files that tests/sharing/history.test.ts runs against the server. */
export const REFERENCE_CLIENT_FILES = ["rest_client.py", "protocol.py", "_internal_auth.py", "version.py"];

/**
 * The reference client's package directory, from DELTA_SHARING_PYTHON_CLIENT only (python/delta_sharing of a
 * delta-io/delta-sharing checkout, or site-packages/delta_sharing after `pip install delta-sharing`), or why the test
 * cannot run here.
 */
export function referenceClientDir(): string | { skipped: string } {
  const dir = process.env.DELTA_SHARING_PYTHON_CLIENT;
  if (!dir) return { skipped: "DELTA_SHARING_PYTHON_CLIENT is not set (docs/delta-sharing.md#tests)" };
  const missing = REFERENCE_CLIENT_FILES.filter((file) => !existsSync(path.join(dir, file)));
  if (missing.length > 0) return { skipped: `DELTA_SHARING_PYTHON_CLIENT=${dir} lacks ${missing.join(", ")}` };
  try {
    execFileSync("python3", ["-c", "import requests"], { stdio: "ignore" });
  } catch {
    return { skipped: "python3 cannot import requests (pip install requests)" };
  }
  return dir;
}

/**
 * Drives the reference client's DataSharingRestClient. Its package's __init__ needs pandas and
 * pyarrow, and its modules import jwcrypto and fsspec for features not used here: those are stood
 * in for by empty modules, and the package is loaded without its __init__.
 */
export const PYTHON_DRIVER = `
import json, os, sys, types
here = os.path.dirname(os.path.abspath(__file__))
package = types.ModuleType("delta_sharing")
package.__path__ = [os.path.join(here, "delta_sharing")]
sys.modules["delta_sharing"] = package
for name in ["jwcrypto", "jwcrypto.jwk", "jwcrypto.jwt", "fsspec"]:
    try:
        __import__(name)
    except ImportError:
        module = types.ModuleType(name)
        module.jwk = module.jwt = types.SimpleNamespace()
        sys.modules[name] = module
from delta_sharing.protocol import CdfOptions, DeltaSharingProfile, Share, Table
from delta_sharing.rest_client import DataSharingRestClient

profile_path, order_id, timestamp = sys.argv[1:4]
with open(profile_path) as f:
    profile = DeltaSharingProfile.from_json(f.read())
client = DataSharingRestClient(profile, num_retries=0)
table = Table(name="prices", share="orders", schema=order_id)
out = {}
out["version"] = client.query_table_version(table).delta_table_version
out["version_since"] = client.query_table_version(table, starting_timestamp=timestamp).delta_table_version
v1 = client.list_files_in_table(table, version=1)
out["files_v1"] = {"version": v1.delta_table_version, "files": len(v1.add_files), "metadata_id": v1.metadata.id}
fields = json.loads(v1.metadata.schema_string)["fields"]
out["described"] = {
    "description": v1.metadata.description,
    "comments": {f["name"]: f["metadata"]["comment"] for f in fields if "comment" in f["metadata"]},
}
ts = client.list_files_in_table(table, timestamp=timestamp)
out["files_ts"] = {"version": ts.delta_table_version, "files": len(ts.add_files)}
changes = client.list_table_changes(table, CdfOptions(starting_version=1, ending_version=3))
out["changes"] = [[type(action).__name__, action.version] for action in changes.actions]
tables = client.list_all_tables(Share(name="orders"))
out["tables"] = sorted(t.name for t in tables.tables)
print(json.dumps(out))
`;
