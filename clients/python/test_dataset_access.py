"""Tests of dataset_access.py (unittest, standard library only).

The tests against the server need DATASET_ACCESS_URL, DATASET_ACCESS_KEY and DATASET_ACCESS_TEST_EXPECT
(what the account holds, as JSON): tests/clients/python-client.test.ts starts the production server on
a real PostgreSQL, loads the account and runs `python3 -m unittest` with them. The retry tests use a
small local stub server and need nothing.
"""

import hashlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest

import dataset_access

HERE = os.path.dirname(os.path.abspath(__file__))
EXPECT = json.loads(os.environ.get("DATASET_ACCESS_TEST_EXPECT") or "null")


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
        deleted = dataset_access.sync(self.client, self.dir, delete=True)
        self.assertIn({"id": EXPECT["refunded_id"], "name": "refunded", "action": "deleted"}, deleted["refunded"])
        self.assertFalse(os.path.exists(refunded))

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

    def test_paces_itself_when_the_limit_is_used_up(self):
        Stub.script = [self.page({"RateLimit": '"datasets";r=0;t=9'}), self.page()]
        list(self.client.iter_orders())
        self.client._json("/orders")
        self.assertEqual(len(self.waits), 1)
        self.assertEqual(self.waits[0][0], "pacing")
        self.assertGreater(self.waits[0][1], 8)


if __name__ == "__main__":
    unittest.main()
