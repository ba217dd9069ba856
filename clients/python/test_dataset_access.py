"""Tests of dataset_access.py (unittest, standard library only).

The tests against the server need DATASET_ACCESS_URL, DATASET_ACCESS_KEY and DATASET_ACCESS_TEST_EXPECT
(what the account holds, as JSON): tests/clients/python-client.test.ts starts the production server on
a real PostgreSQL, loads the account and runs `python3 -m unittest` with them. The retry tests use a
small local stub server and need nothing. The read_pandas tests need pandas (apt-get install
python3-pandas); one runs the interpreter EXPECT names as lacking it.
"""

import hashlib
import http.server
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest
from unittest import mock

import dataset_access

HERE = os.path.dirname(os.path.abspath(__file__))
EXPECT = json.loads(os.environ.get("DATASET_ACCESS_TEST_EXPECT") or "null")
HAS_PANDAS = importlib.util.find_spec("pandas") is not None
HAS_PYARROW = importlib.util.find_spec("pyarrow") is not None
# The data order's products (tests/datasets/helpers.ts): 250 rows, every tenth note null.
PRODUCT_COLUMNS = ["id", "name", "price", "listed_at", "note"]
PRODUCT_ROWS = 250


def sha256_of(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


@unittest.skipIf(EXPECT is None, "no server: run through tests/clients/python-client.test.ts")
class AgainstTheServer(unittest.TestCase):
    def setUp(self):
        self.client = dataset_access.Client()
        self.dir = tempfile.mkdtemp(prefix="dataset-access-py-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_lists_every_order_across_pages(self):
        ids = [order["id"] for order in self.client.iter_orders(page_size=2)]
        self.assertEqual(sorted(ids), sorted(EXPECT["order_ids"]))
        self.assertEqual(len(ids), len(set(ids)))

    def test_sync_verifies_every_file_and_a_rerun_transfers_nothing(self):
        report = dataset_access.sync(self.client, self.dir)
        expected_files = sum(len(files) for files in EXPECT["delivered"].values())
        self.assertEqual(report["files"]["downloaded"], expected_files)
        self.assertEqual(report["files"]["failed"], 0)
        for order_id, files in EXPECT["delivered"].items():
            for name, digest in files.items():
                self.assertEqual(sha256_of(os.path.join(self.dir, order_id, name)), digest)
        again = dataset_access.sync(self.client, self.dir)
        self.assertEqual(again["files"]["skipped"], expected_files)
        self.assertEqual(again["bytes_fetched"], 0)

    def test_resumes_a_partial_file_and_repairs_a_damaged_one(self):
        dataset_access.sync(self.client, self.dir)
        order_id, name = EXPECT["big"]
        target = os.path.join(self.dir, order_id, name)
        with open(target, "rb") as handle:
            content = handle.read()
        os.remove(target)
        with open(target + ".part", "wb") as handle:
            handle.write(content[: len(content) // 3])
        resumed = dataset_access.sync(self.client, self.dir)
        self.assertEqual(resumed["files"]["resumed"], 1)
        self.assertEqual(resumed["bytes_fetched"], len(content) - len(content) // 3)
        self.assertEqual(sha256_of(target), hashlib.sha256(content).hexdigest())

        os.remove(target)
        with open(target + ".part", "wb") as handle:
            handle.write(b"x" * 1000)
        repaired = dataset_access.sync(self.client, self.dir)
        self.assertEqual(repaired["files"]["repaired"], 1)
        self.assertEqual(sha256_of(target), hashlib.sha256(content).hexdigest())

    def test_keeps_a_refunded_order_unless_delete(self):
        refunded = os.path.join(self.dir, EXPECT["refunded_id"])
        os.makedirs(refunded)
        with open(os.path.join(refunded, "earlier.csv"), "w") as handle:
            handle.write("from an earlier sync\n")
        kept = dataset_access.sync(self.client, self.dir)
        self.assertIn({"id": EXPECT["refunded_id"], "name": "refunded", "action": "kept"}, kept["refunded"])
        self.assertTrue(os.path.exists(os.path.join(refunded, "earlier.csv")))
        # --delete removes what the manifest says a sync wrote (earlier.csv, recorded while the order
        # was delivered), and leaves a file it did not write, with the directory.
        manifest_path = os.path.join(self.dir, dataset_access.MANIFEST_NAME)
        with open(manifest_path) as handle:
            manifest = json.load(handle)
        digest = hashlib.sha256(b"from an earlier sync\n").hexdigest()
        manifest["orders"][EXPECT["refunded_id"]] = {
            "name": "refunded",
            "status": "refunded",
            "files": {"earlier.csv": {"id": "fil_" + "0" * 32, "sha256": digest, "size": 21}},
        }
        with open(manifest_path, "w") as handle:
            json.dump(manifest, handle)
        with open(os.path.join(refunded, "mine.txt"), "w") as handle:
            handle.write("not written by the sync\n")
        deleted = dataset_access.sync(self.client, self.dir, delete=True)
        self.assertIn(
            {
                "id": EXPECT["refunded_id"],
                "name": "refunded",
                "action": "deleted",
                "deleted": ["earlier.csv"],
                "left": ["mine.txt"],
            },
            deleted["refunded"],
        )
        self.assertEqual(os.listdir(refunded), ["mine.txt"])
        self.assertEqual(deleted["refused"], [])

    def test_refusals_are_typed_with_code_and_request_id(self):
        client = dataset_access.Client(api_key="dak_" + "A" * 32)
        with self.assertRaises(dataset_access.DatasetAccessError) as raised:
            list(client.iter_orders())
        self.assertEqual(raised.exception.status, 401)
        self.assertIn(raised.exception.code, ("invalid_api_key", "missing_api_key"))
        self.assertTrue(raised.exception.request_id)

    def test_the_command_syncs_and_reports_json(self):
        run = subprocess.run(
            [sys.executable, os.path.join(HERE, "dataset_access.py"), "sync", "--dir", self.dir, "--json"],
            capture_output=True,
            text=True,
            check=False,
        )
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(json.loads(run.stdout)["files"]["failed"], 0)
        usage = subprocess.run(
            [sys.executable, os.path.join(HERE, "dataset_access.py"), "sync"], capture_output=True, text=True
        )
        self.assertEqual(usage.returncode, 2)


@unittest.skipIf(EXPECT is None, "no server: run through tests/clients/python-client.test.ts")
class FormatsAgainstTheServer(unittest.TestCase):
    """An order of products.csv, listings.json, catalog.parquet, archive.bin and ragged.csv (unreadable: its
    publication failed, so it is no file of the order), profiled by the server's worker before the suite starts
    (Parquet renditions ready)."""

    def setUp(self):
        self.waits = []
        self.client = dataset_access.Client(api_key=EXPECT["formats"]["key"],
                                            on_wait=lambda reason, seconds: self.waits.append(reason))
        self.order_id = EXPECT["formats"]["order_id"]
        self.dir = tempfile.mkdtemp(prefix="dataset-access-py-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def api_files(self):
        return {file["name"]: file for file in self.client.get_order(self.order_id)["files"]}

    def test_sync_as_parquet_verifies_each_rendition_by_its_sha256_and_reports_the_binary_file(self):
        report = dataset_access.sync(self.client, self.dir, format="parquet")
        self.assertEqual(report["format"], "parquet")
        self.assertEqual({k: report["files"][k] for k in ("total", "downloaded", "failed", "refused", "no_rendition")},
                         {"total": 4, "downloaded": 3, "failed": 0, "refused": 0, "no_rendition": 1})
        self.assertEqual([(each["file"], each["order"]) for each in report["no_rendition"]],
                         [("archive.bin", self.order_id)])
        self.assertIn("binary", report["no_rendition"][0]["reason"])
        files = self.api_files()
        parquet = {f["format"]: f for f in files["products.csv"]["renditions"]}["parquet"]
        local = os.path.join(self.dir, self.order_id)
        self.assertEqual(sorted(os.listdir(local)), ["catalog.parquet", "listings.parquet", "products.parquet"])
        self.assertEqual(sha256_of(os.path.join(local, "products.parquet")), parquet["sha256"])
        listings = {f["format"]: f for f in files["listings.json"]["renditions"]}["parquet"]
        self.assertEqual(sha256_of(os.path.join(local, "listings.parquet")), listings["sha256"])
        self.assertEqual(sha256_of(os.path.join(local, "catalog.parquet")), files["catalog.parquet"]["sha256"])
        with open(os.path.join(self.dir, dataset_access.MANIFEST_NAME)) as handle:
            recorded = json.load(handle)["orders"][self.order_id]["files"]
        self.assertEqual(recorded["products.parquet"], {"id": files["products.csv"]["id"], "sha256": parquet["sha256"],
                                                        "size": parquet["size"], "format": "parquet",
                                                        "rendition": True})
        self.assertEqual((recorded["catalog.parquet"]["format"], recorded["catalog.parquet"]["rendition"]),
                         ("parquet", False))
        again = dataset_access.sync(self.client, self.dir, format="parquet")
        self.assertEqual((again["files"]["skipped"], again["bytes_fetched"]), (3, 0))

        run = subprocess.run(
            [sys.executable, os.path.join(HERE, "dataset_access.py"), "sync", "--dir", self.dir, "--format", "parquet",
             "--json"],
            capture_output=True, text=True, check=False,
            env=dict(os.environ, DATASET_ACCESS_KEY=EXPECT["formats"]["key"]),
        )
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(json.loads(run.stdout)["files"]["skipped"], 3)

    def test_download_waits_while_the_rendition_is_made_then_verifies_it(self):
        self.assertNotIn("jsonl", [r["format"] for r in self.api_files()["products.csv"]["renditions"]])
        dest = os.path.join(self.dir, "products.jsonl")
        result = self.client.download(self.order_id, "products.csv", dest, format="jsonl")
        self.assertIn("rendition", self.waits)  # a 202 first: CSV and JSON Lines are made on first request
        made = {r["format"]: r for r in self.api_files()["products.csv"]["renditions"]}["jsonl"]
        self.assertEqual((result["format"], result["rendition"], result["sha256"]), ("jsonl", True, made["sha256"]))
        self.assertEqual(sha256_of(dest), made["sha256"])
        with open(dest) as handle:
            lines = handle.read().splitlines()
        self.assertEqual(len(lines), PRODUCT_ROWS)
        self.assertEqual(json.loads(lines[0])["name"], 'Product 1, "deluxe"')


@unittest.skipIf(EXPECT is None, "no server: run through tests/clients/python-client.test.ts")
@unittest.skipUnless(HAS_PANDAS, "pandas is not installed: apt-get install python3-pandas")
class ReadPandas(unittest.TestCase):
    def setUp(self):
        self.client = dataset_access.Client(api_key=EXPECT["formats"]["key"])
        self.order_id = EXPECT["formats"]["order_id"]

    def assert_products(self, frame):
        self.assertEqual(list(frame.columns), PRODUCT_COLUMNS)
        self.assertEqual(len(frame), PRODUCT_ROWS)
        self.assertEqual(frame["name"][0], 'Product 1, "deluxe"')
        self.assertEqual(frame["price"][1], 2.5)
        self.assertEqual(int(frame["note"].isna().sum()), PRODUCT_ROWS // 10)

    def test_reads_csv_and_json_originals(self):
        for name in ("products.csv", "listings.json"):
            with self.subTest(name):
                self.assert_products(self.client.read_pandas(self.order_id, name))

    def test_reads_parquet_through_a_rendition_pandas_can_read(self):
        # Without pyarrow the JSON Lines rendition (pandas turns *_at columns into timestamps), else the original.
        frame = self.client.read_pandas(self.order_id, "catalog.parquet")
        self.assert_products(frame)
        self.assertTrue(str(frame["listed_at"].dtype).startswith("datetime64"))
        self.assert_products(self.client.read_pandas(self.order_id, "listings.json", format="csv"))
        if HAS_PYARROW:
            self.assert_products(self.client.read_pandas(self.order_id, "products.csv", format="parquet"))
        else:
            with self.assertRaises(ImportError) as raised:
                self.client.read_pandas(self.order_id, "products.csv", format="parquet")
            self.assertIn("pip install pyarrow", str(raised.exception))

    def test_a_binary_file_is_no_table(self):
        with self.assertRaises(dataset_access.NoRenditionError):
            self.client.read_pandas(self.order_id, "archive.bin")

    def test_without_pandas_it_names_what_to_install_and_the_rest_still_works(self):
        script = (
            "import importlib.util, json, os, dataset_access\n"
            "assert importlib.util.find_spec('pandas') is None, 'this interpreter has pandas'\n"
            "client = dataset_access.Client(api_key=os.environ['FORMATS_KEY'])\n"
            "orders = [order['id'] for order in client.iter_orders()]\n"
            "try:\n"
            "    client.read_pandas(orders[0], 'products.csv')\n"
            "except ImportError as error:\n"
            "    print(json.dumps({'orders': orders, 'message': str(error), 'name': error.name}))\n"
        )
        run = subprocess.run(EXPECT["python_without_pandas"] + ["-c", script], cwd=HERE, capture_output=True, text=True,
                             env=dict(os.environ, FORMATS_KEY=EXPECT["formats"]["key"]), check=False)
        self.assertEqual(run.returncode, 0, run.stderr)
        answer = json.loads(run.stdout)
        self.assertEqual(answer["orders"], [self.order_id])
        self.assertEqual(answer["name"], "pandas")
        self.assertIn("apt-get install python3-pandas", answer["message"])
        self.assertIn("pip install pandas", answer["message"])


class WithoutPandas(unittest.TestCase):
    """Issue #39: read_table_pandas's error named read_pandas. Nothing reaches the network: pandas is asked first."""

    def test_each_pandas_method_names_itself(self):
        client = dataset_access.Client(base_url="http://127.0.0.1:9", api_key="dak_" + "x" * 38)
        calls = {
            "read_pandas": lambda: client.read_pandas("ord_x", "products.csv"),
            "read_table_pandas": lambda: client.read_table_pandas("ord_x", "prices"),
            "read_changes_pandas": lambda: client.read_changes_pandas("ord_x", "prices", 0),
            "rows": lambda: client.rows("ord_x", "prices", as_pandas=True),
            "sql": lambda: client.sql("ord_x", "SELECT 1", as_pandas=True),
        }
        for method, call in calls.items():
            with mock.patch.dict(sys.modules, {"pandas": None}), self.assertRaises(ImportError) as raised:
                call()
            self.assertTrue(str(raised.exception).startswith(method + " needs pandas"), str(raised.exception))


@unittest.skipIf(EXPECT is None, "no server: run through tests/clients/python-client.test.ts")
class TablesAgainstTheServer(unittest.TestCase):
    """A keyed snapshot table `prices` of two parts a version, refreshed twice (EXPECT["tables"]): 50 products;
    10 repriced, 41-50 gone, 51-60 new; 5 more."""

    def setUp(self):
        self.expect = EXPECT["tables"]
        self.waits = []
        self.client = dataset_access.Client(api_key=self.expect["key"],
                                            on_wait=lambda reason, seconds: self.waits.append(reason))
        self.order_id, self.table = self.expect["order_id"], self.expect["table"]
        self.dir = tempfile.mkdtemp(prefix="dataset-access-py-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_tables_versions_and_one_version(self):
        tables = self.client.tables(self.order_id)
        self.assertEqual([(t["name"], t["mode"], t["key"], t["version"], t["rows"]) for t in tables],
                         [("prices", "snapshot", ["id"], 3, self.expect["rows"][2])])
        self.assertEqual(self.client.table(self.order_id, "prices")["version"], 3)
        versions = self.client.versions(self.order_id, self.table)
        self.assertEqual([v["version"] for v in versions], [3, 2, 1])
        self.assertEqual([v["changes"] for v in reversed(versions)], self.expect["changes"])
        first = self.client.version(self.order_id, self.table, 1)
        self.assertEqual(sorted(f["name"] for f in first["files"]), ["prices-1a.csv", "prices-1b.csv"])
        with self.assertRaises(dataset_access.DatasetAccessError) as raised:
            self.client.version(self.order_id, self.table, 9)
        self.assertEqual(raised.exception.code, "version_not_found")

    def test_download_changes_is_checked_by_the_links_sha256_and_resumes(self):
        dest = os.path.join(self.dir, "prices.v2.changes.parquet")
        result = self.client.download_changes(self.order_id, self.table, 2, dest)
        self.assertEqual((result["verified_by"], result["resumed_from"]), ("sha256", 0))
        self.assertEqual(sha256_of(dest), result["sha256"])
        with open(dest, "rb") as handle:
            content = handle.read()
        os.remove(dest)
        with open(dest + ".part", "wb") as handle:
            handle.write(content[:100])
        again = self.client.download_changes(self.order_id, self.table, 2, dest)
        self.assertEqual((again["resumed_from"], again["bytes_fetched"]), (100, len(content) - 100))
        self.assertEqual(sha256_of(dest), result["sha256"])

    def test_the_changes_command_writes_every_later_version_and_a_rerun_fetches_nothing(self):
        command = [sys.executable, os.path.join(HERE, "dataset_access.py"), "changes", "--order", self.order_id,
                   "--table", self.table, "--since", "1", "--dir", self.dir, "--json"]
        environment = dict(os.environ, DATASET_ACCESS_KEY=self.expect["key"])
        run = subprocess.run(command, capture_output=True, text=True, check=False, env=environment)
        self.assertEqual(run.returncode, 0, run.stderr)
        report = json.loads(run.stdout)
        self.assertEqual((report["current_version"], report["last_version"], report["pruned"]), (3, 3, []))
        self.assertEqual([(f["file"], f["action"], f["verified_by"]) for f in report["files"]],
                         [("prices.v2.changes.parquet", "written", "sha256"),
                          ("prices.v3.changes.parquet", "written", "sha256")])
        for file in report["files"]:
            self.assertEqual(sha256_of(os.path.join(self.dir, file["file"])), file["sha256"])
        self.assertEqual([f["changes"] for f in report["files"]], self.expect["changes"][1:])
        again = json.loads(subprocess.run(command, capture_output=True, text=True, check=True, env=environment).stdout)
        self.assertEqual([f["action"] for f in again["files"]], ["skipped", "skipped"])
        listed = subprocess.run(command[:2] + ["tables", "--order", self.order_id, "--json"], capture_output=True,
                                text=True, check=True, env=environment)
        self.assertEqual([t["name"] for t in json.loads(listed.stdout)], ["prices"])

    def test_sync_deletes_superseded_parts_only_with_delete(self):
        dataset_access.sync(self.client, self.dir)
        local = os.path.join(self.dir, self.order_id)
        self.assertEqual(sorted(os.listdir(local)), ["prices-3a.csv", "prices-3b.csv"])
        # An earlier sync's copy of version 2's first part: in the manifest, no longer in the order's files.
        old = self.client.version(self.order_id, self.table, 2)["files"][0]
        self.client.download({"id": self.order_id, "files": [old]}, old, os.path.join(local, old["name"]))
        manifest_path = os.path.join(self.dir, dataset_access.MANIFEST_NAME)
        with open(manifest_path) as handle:
            manifest = json.load(handle)
        manifest["orders"][self.order_id]["files"][old["name"]] = {"id": old["id"], "sha256": old["sha256"],
                                                                  "size": old["size"]}
        with open(manifest_path, "w") as handle:
            json.dump(manifest, handle)
        kept = dataset_access.sync(self.client, self.dir)
        self.assertEqual(kept["superseded"], [{"order": self.order_id, "file": old["name"], "action": "kept"}])
        deleted = dataset_access.sync(self.client, self.dir, delete=True)
        self.assertEqual(deleted["superseded"], [{"order": self.order_id, "file": old["name"], "action": "deleted"}])
        self.assertEqual(sorted(os.listdir(local)), ["prices-3a.csv", "prices-3b.csv"])

    @unittest.skipUnless(HAS_PANDAS, "pandas is not installed: apt-get install python3-pandas")
    def test_rows_filters_columns_and_pages_on_the_server(self):
        # Version 3: products 1-40 (1-10 at twice their id, the rest at 1.5 times) and 51-65.
        cheap = self.client.rows(self.order_id, self.table, columns=["id", "price"], where="id <= 10 AND price > 4",
                                 order_by="id desc")
        self.assertEqual(cheap, [{"id": i, "price": i * 2} for i in range(10, 2, -1)])
        every = self.client.rows(self.order_id, self.table, columns=["id"], limit=7, all=True)
        self.assertEqual(sorted(row["id"] for row in every), list(range(1, 41)) + list(range(51, 66)))
        first = self.client.rows(self.order_id, self.table, version=1, where="id > 40", columns=["id"], all=True)
        self.assertEqual([row["id"] for row in first], list(range(41, 51)))
        page = self.client.rows_page(self.order_id, self.table, limit=50)
        self.assertEqual((page["version"], len(page["rows"]), page["next_offset"]), (3, 50, 50))
        for where, code in (("id = (SELECT 1)", "invalid_filter"), ("nope = 1", "unknown_column")):
            with self.assertRaises(dataset_access.DatasetAccessError) as raised:
                self.client.rows(self.order_id, self.table, where=where)
            self.assertEqual(raised.exception.code, code, where)

    def test_sql_answers_dicts_over_versions_and_refuses_anything_but_a_select(self):
        counts = self.client.sql(self.order_id, 'SELECT (SELECT count(*) FROM "prices")::INTEGER AS now, '
                                                '(SELECT count(*) FROM "prices@1")::INTEGER AS first')
        self.assertEqual(counts, [{"now": 55, "first": 50}])
        result = self.client.sql_result(self.order_id, 'SELECT id FROM "prices" ORDER BY id', limit=5)
        self.assertEqual(([row[0] for row in result["rows"]], result["truncated"]), ([1, 2, 3, 4, 5], True))
        with self.assertRaises(dataset_access.DatasetAccessError) as raised:
            self.client.sql(self.order_id, "COPY prices TO '/tmp/x.csv'")
        self.assertEqual(raised.exception.code, "invalid_sql")

    @unittest.skipUnless(HAS_PANDAS, "needs pandas")
    def test_rows_and_sql_as_pandas(self):
        frame = self.client.rows(self.order_id, self.table, columns=["id", "name"], where="id BETWEEN 51 AND 53",
                                 as_pandas=True)
        self.assertEqual(list(frame.columns), ["id", "name"])
        self.assertEqual(frame["name"].tolist(), ["Product 51", "Product 52", "Product 53"])
        answer = self.client.sql(self.order_id, 'SELECT id % 2 AS odd, count(*)::INTEGER AS n FROM "prices" '
                                                'GROUP BY 1 ORDER BY 1', as_pandas=True)
        self.assertEqual(answer.to_dict("records"), [{"odd": 0, "n": 27}, {"odd": 1, "n": 28}])

    def test_read_table_pandas_reads_every_part_of_a_version(self):
        current = self.client.read_table_pandas(self.order_id, self.table)
        self.assertEqual(list(current.columns), ["id", "name", "price"])
        self.assertEqual(len(current), self.expect["rows"][2])
        self.assertEqual(sorted(current["id"].tolist()), list(range(1, 41)) + list(range(51, 66)))
        first = self.client.read_table_pandas(self.order_id, self.table, version=1)
        self.assertEqual(sorted(first["id"].tolist()), list(range(1, 51)))
        self.assertEqual(float(first.loc[first["id"] == 4, "price"].iloc[0]), 6.0)

    @unittest.skipUnless(HAS_PANDAS, "pandas is not installed: apt-get install python3-pandas")
    def test_read_changes_pandas_has_the_change_columns_of_every_later_version(self):
        frame = self.client.read_changes_pandas(self.order_id, self.table, 1)
        self.assertEqual(list(frame.columns),
                         ["id", "name", "price", "_change_type", "_commit_version", "_commit_timestamp"])
        self.assertEqual(sorted(set(frame["_commit_version"].tolist())), [2, 3])
        self.assertTrue(str(frame["_commit_timestamp"].dtype).startswith("datetime64"))
        for version, changes in ((2, self.expect["changes"][1]), (3, self.expect["changes"][2])):
            counts = frame[frame["_commit_version"] == version]["_change_type"].value_counts().to_dict()
            self.assertEqual((counts.get("insert", 0), counts.get("update_postimage", 0), counts.get("delete", 0)),
                             (changes["inserted"], changes["updated"], changes["deleted"]))
        repriced = frame[(frame["id"] == 4) & (frame["_change_type"] == "update_postimage")]
        self.assertEqual(float(repriced["price"].iloc[0]), 8.0)
        if not HAS_PYARROW:
            self.assertIn("rendition", self.waits)  # the JSON Lines form is made on first request (202)
        self.assertEqual(len(self.client.read_changes_pandas(self.order_id, self.table, 3)), 0)


class Stub(http.server.BaseHTTPRequestHandler):
    """Answers from a script: each request takes the next (status, headers, body)."""

    script = []
    seen = []

    def do_GET(self):
        Stub.seen.append(self.path)
        status, headers, body = Stub.script.pop(0)
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Retries(unittest.TestCase):
    def setUp(self):
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Stub)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.waits = []
        self.client = dataset_access.Client(
            base_url="http://127.0.0.1:%d" % self.server.server_address[1],
            api_key="dak_test",
            sleep=lambda seconds: None,
            on_wait=lambda reason, seconds: self.waits.append((reason, seconds)),
        )
        Stub.seen = []

    def tearDown(self):
        self.server.shutdown()
        self.server.server_close()

    def page(self, headers=None):
        return (200, dict({"Content-Type": "application/json"}, **(headers or {})), b'{"data": [], "next_offset": null}')

    def test_waits_retry_after_on_429_and_503(self):
        problem = json.dumps({"code": "rate_limited", "detail": "slow down", "request_id": "r1"}).encode()
        Stub.script = [
            (429, {"Retry-After": "7", "Content-Type": "application/problem+json"}, problem),
            (503, {"Retry-After": "2"}, b"{}"),
            self.page(),
        ]
        self.assertEqual(list(self.client.iter_orders()), [])
        self.assertEqual(self.waits, [("rate_limited", 7), ("unavailable", 2)])
        self.assertEqual(self.client.rate_limited_responses, 1)

    def test_never_retries_other_4xx(self):
        problem = json.dumps({"code": "invalid_request", "detail": "limit must be from 1 to 50", "request_id": "r2"})
        Stub.script = [(400, {"Content-Type": "application/problem+json"}, problem.encode())]
        with self.assertRaises(dataset_access.DatasetAccessError) as raised:
            list(self.client.iter_orders())
        self.assertEqual((raised.exception.code, raised.exception.request_id), ("invalid_request", "r2"))
        self.assertEqual(len(Stub.seen), 1)
        self.assertEqual(self.waits, [])

    @unittest.skipUnless(HAS_PANDAS, "pandas is not installed: apt-get install python3-pandas")
    def test_read_pandas_reads_nothing_that_fails_its_sha256(self):
        content = b"a,b\n1,2\n"
        file = {"id": "fil_" + "1" * 32, "name": "t.csv", "size": len(content), "sha256": "0" * 64, "format": "csv",
                "compression": None, "renditions": []}
        order = {"id": "ord_" + "1" * 32, "files": [file]}
        link = "http://127.0.0.1:%d/blob" % self.server.server_address[1]
        Stub.script = [(302, {"Location": link}, b""), (200, {}, content)]
        with self.assertRaises(dataset_access.VerificationError):
            self.client.read_pandas(order, file)
        self.assertEqual(Stub.seen, ["/api/v1/orders/%s/files/%s" % (order["id"], file["id"]), "/blob"])

    def test_paces_itself_when_the_limit_is_used_up(self):
        Stub.script = [self.page({"RateLimit": '"datasets";r=0;t=9'}), self.page()]
        list(self.client.iter_orders())
        self.client._json("/orders")
        self.assertEqual(len(self.waits), 1)
        self.assertEqual(self.waits[0][0], "pacing")
        self.assertGreater(self.waits[0][1], 8)

    def test_at_the_limit_sends_one_request_per_slot(self):
        # The quota spent: the window's end plus a slot (w/q = 1 s); then, still at the limit, a slot, not a window.
        policy = {"RateLimit-Policy": '"datasets";q=60;w=60'}
        Stub.script = [
            self.page(dict(policy, RateLimit='"datasets";r=0;t=9')),
            self.page(dict(policy, RateLimit='"datasets";r=0;t=59')),
            self.page(dict(policy, RateLimit='"datasets";r=1;t=58')),
            self.page(),
        ]
        now = [1000.0]

        def sleep(seconds):
            now[0] += seconds

        self.client = dataset_access.Client(
            base_url=self.client.base, api_key="dak_test", sleep=sleep, clock=lambda: now[0],
            on_wait=lambda reason, seconds: self.waits.append((reason, seconds)),
        )
        for _ in range(4):
            self.client._json("/orders")
        self.assertEqual([reason for reason, _ in self.waits], ["pacing", "pacing", "pacing"])
        self.assertEqual([seconds for _, seconds in self.waits], [10, 1, 1])


if __name__ == "__main__":
    unittest.main()
