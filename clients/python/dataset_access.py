#!/usr/bin/env python3
"""Dataset Access client: one file, Python 3.9+ standard library only (vendor it as it is).

    import dataset_access
    client = dataset_access.Client()            # DATASET_ACCESS_URL, DATASET_ACCESS_KEY
    for order in client.iter_orders():          # every page
        print(order["id"], order["status"])
    client.download(order, order["files"][0], "products.csv")   # resumable, sha256-verified
    report = dataset_access.sync(client, "data/")               # mirror every delivered order

    python3 dataset_access.py sync --dir data/ [--delete] [--json]

Requests are retried on 429 and 503 after their Retry-After, on other 5xx and network errors with
jittered exponential backoff, never on other 4xx; the client paces itself from the RateLimit header
so a long sync does not meet a 429. Downloads resume a partial `<file>.part` with Range (If-Range on
its ETag), verify size and sha256, and are renamed into place only then.

Exit codes of the command: 0 done; 1 some files failed; 2 usage; 3 refused by the API; 4 network.
"""

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

__all__ = [
    "Client",
    "DatasetAccessError",
    "NetworkError",
    "VerificationError",
    "sync",
    "MANIFEST_NAME",
]

MANIFEST_NAME = ".dataset-access.json"
USER_AGENT = "dataset-access-client-python/0.1"
CHUNK = 1024 * 1024


class DatasetAccessError(Exception):
    """An error answer of the API: the problem's code, detail and request_id."""

    def __init__(self, status, problem):
        self.status = status
        self.code = problem.get("code") or "http_%d" % status
        self.detail = problem.get("detail") or "The API answered %d." % status
        self.request_id = problem.get("request_id")
        super().__init__("%s: %s" % (self.code, self.detail))


class NetworkError(Exception):
    """The server could not be reached (or the connection broke) after every retry."""


class VerificationError(Exception):
    """A downloaded file's size or sha256 is not the one the API gave: nothing was kept."""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """The API's 302 to a signed link is read, not followed (the link is fetched on its own)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


def api_base(url):
    url = url.rstrip("/")
    return url if url.endswith("/api/v1") else url + "/api/v1"


def _retry_after_seconds(value):
    if value and value.strip().isdigit():
        return int(value.strip())
    return None


class Client:
    """A client of the Dataset Access API (a key with datasets:read)."""

    def __init__(self, base_url=None, api_key=None, max_retries=8, max_delay=60.0, sleep=time.sleep, on_wait=None):
        base_url = base_url or os.environ.get("DATASET_ACCESS_URL")
        api_key = api_key or os.environ.get("DATASET_ACCESS_KEY")
        if not base_url:
            raise ValueError("No server URL: pass base_url or set DATASET_ACCESS_URL.")
        if not api_key:
            raise ValueError("No API key: pass api_key or set DATASET_ACCESS_KEY.")
        self.base = api_base(base_url)
        self.api_key = api_key
        self.max_retries = max_retries
        self.max_delay = max_delay
        self.sleep = sleep
        self.on_wait = on_wait
        self.rate_limited_responses = 0
        self._paused_until = 0.0
        self._api = urllib.request.build_opener(_NoRedirect)

    # -- transport ------------------------------------------------------------------------

    def _wait(self, reason, seconds):
        seconds = min(seconds, self.max_delay)
        if self.on_wait:
            self.on_wait(reason, seconds)
        self.sleep(seconds)

    def _backoff(self, attempt):
        return random.uniform(0, min(self.max_delay, 0.5 * 2 ** attempt))

    def _note_pacing(self, headers):
        match = re.search(r"(?:^|;)\s*r=(\d+)\s*;\s*t=(\d+)", headers.get("RateLimit") or "")
        if match and int(match.group(1)) == 0:
            self._paused_until = time.time() + int(match.group(2))

    def _request(self, path):
        """GET an API path: (status, headers, body bytes); a redirect is answered, not followed."""
        url = self.base + path
        for attempt in range(self.max_retries + 1):
            pause = self._paused_until - time.time()
            if pause > 0:
                self._wait("pacing", pause)
            request = urllib.request.Request(
                url, headers={"Authorization": "Bearer " + self.api_key, "User-Agent": USER_AGENT}
            )
            try:
                with self._api.open(request, timeout=60) as response:
                    self._note_pacing(response.headers)
                    return response.status, response.headers, response.read()
            except urllib.error.HTTPError as error:
                body = error.read()
                self._note_pacing(error.headers)
                status = error.code
                if status in (301, 302, 303, 307, 308):
                    return status, error.headers, body
                retryable = status == 429 or status >= 500
                if not retryable or attempt >= self.max_retries:
                    raise _problem(status, error.headers, body)
                if status == 429:
                    self.rate_limited_responses += 1
                wait = _retry_after_seconds(error.headers.get("Retry-After"))
                if status in (429, 503) and wait is not None:
                    self._wait("rate_limited" if status == 429 else "unavailable", wait)
                else:
                    self._wait("unavailable", self._backoff(attempt))
            except (urllib.error.URLError, OSError) as error:
                if attempt >= self.max_retries:
                    raise NetworkError("GET %s failed: %s" % (url, error))
                self._wait("network", self._backoff(attempt))
        raise NetworkError("GET %s failed" % url)

    def _json(self, path):
        status, headers, body = self._request(path)
        if status != 200:
            raise _problem(status, headers, body)
        return json.loads(body)

    # -- API ------------------------------------------------------------------------------

    def iter_orders(self, page_size=50):
        """Every paid order, newest first, page by page."""
        offset = 0
        while offset is not None:
            page = self._json("/orders?" + urllib.parse.urlencode({"limit": page_size, "offset": offset}))
            for order in page["data"]:
                yield order
            offset = page["next_offset"]

    def get_order(self, order_id):
        return self._json("/orders/" + urllib.parse.quote(order_id, safe=""))

    def signed_link(self, order_id, file_id):
        """A fresh signed link to one file (the API's 302), not followed."""
        path = "/orders/%s/files/%s" % (urllib.parse.quote(order_id, safe=""), urllib.parse.quote(file_id, safe=""))
        status, headers, body = self._request(path)
        if status == 302 and headers.get("Location"):
            return urllib.parse.urljoin(self.base + path, headers["Location"])
        raise _problem(status, headers, body)

    def download(self, order, file, dest, on_progress=None, attempts=5):
        """Downloads `file` (a File object, id or name) of `order` (an Order or id) to `dest`.

        Resumes `dest.part`, verifies size and sha256, renames into place only then. Answers a dict:
        bytes_fetched, resumed_from, restarted (a damaged partial file was fetched again whole).
        """
        if isinstance(order, str):
            order = self.get_order(order)
        wanted = file["id"] if isinstance(file, dict) else file
        found = [f for f in order["files"] if f["id"] == wanted or f["name"] == wanted]
        if not found:
            raise DatasetAccessError(
                404, {"code": "file_not_found", "detail": "Order %s has no file %s." % (order["id"], wanted)}
            )
        file = found[0]
        return _download_verified(
            lambda: self.signed_link(order["id"], file["id"]), dest, file, on_progress=on_progress, attempts=attempts
        )


def _problem(status, headers, body):
    try:
        problem = json.loads(body.decode("utf-8"))
        if not isinstance(problem, dict):
            problem = {}
    except (ValueError, UnicodeDecodeError):
        problem = {}
    problem.setdefault("request_id", headers.get("X-Request-Id") if headers else None)
    return DatasetAccessError(status, problem)


def _size(path):
    try:
        return os.path.getsize(path) if os.path.isfile(path) else -1
    except OSError:
        return -1


def _hash_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
    return digest


def _sha256(path):
    return _hash_file(path).hexdigest()


def is_verified(path, expected):
    return _size(path) == expected["size"] and _sha256(path) == expected["sha256"]


def _download_verified(signed_link, dest, expected, on_progress=None, attempts=5):
    os.makedirs(os.path.dirname(os.path.abspath(dest)), exist_ok=True)
    part, etag_file = dest + ".part", dest + ".part.etag"
    fetched, resumed_from, restarted = 0, None, False
    attempt = 0
    while True:
        attempt += 1
        have = max(0, _size(part))
        if have > expected["size"]:
            os.remove(part)
            have = 0
        if resumed_from is None:
            resumed_from = have
        running = None
        try:
            if have < expected["size"]:
                headers = {"User-Agent": USER_AGENT}
                if have > 0:
                    headers["Range"] = "bytes=%d-" % have
                    if os.path.exists(etag_file):
                        with open(etag_file) as handle:
                            headers["If-Range"] = handle.read().strip()
                request = urllib.request.Request(signed_link(), headers=headers)
                try:
                    response = urllib.request.urlopen(request, timeout=60)
                except urllib.error.HTTPError as error:
                    if error.code != 416:
                        raise NetworkError("the download link answered %d" % error.code)
                    response = None
                if response is not None:
                    with response:
                        append = response.status == 206 and have > 0
                        if response.headers.get("ETag"):
                            with open(etag_file, "w") as handle:
                                handle.write(response.headers["ETag"])
                        # The sha256 as the file grows: the bytes already on disk, then each chunk written.
                        running = _hash_file(part) if append else hashlib.sha256()
                        with open(part, "ab" if append else "wb") as out:
                            for chunk in iter(lambda: response.read(CHUNK), b""):
                                out.write(chunk)
                                running.update(chunk)
                                fetched += len(chunk)
                                if on_progress:
                                    on_progress(len(chunk))
            size = _size(part)
            digest = (running.hexdigest() if running else _sha256(part)) if size == expected["size"] else None
            if size != expected["size"] or digest != expected["sha256"]:
                for leftover in (part, etag_file):
                    if os.path.exists(leftover):
                        os.remove(leftover)
                if resumed_from > 0 and not restarted:
                    restarted, resumed_from = True, 0
                    continue
                raise VerificationError(
                    "%s: got %d bytes%s, expected %d bytes with sha256 %s"
                    % (os.path.basename(dest), size, " with sha256 " + digest if digest else "",
                       expected["size"], expected["sha256"])
                )
            os.replace(part, dest)
            if os.path.exists(etag_file):
                os.remove(etag_file)
            return {"bytes_fetched": fetched, "resumed_from": resumed_from, "restarted": restarted}
        except (NetworkError, urllib.error.URLError, OSError) as error:
            if attempt >= attempts:
                raise error if isinstance(error, NetworkError) else NetworkError(str(error))
            time.sleep(random.uniform(0, 0.5 * 2 ** attempt))


def _safe_name(name):
    base = os.path.basename(name.replace("\\", "/"))
    return base if base not in ("", ".", "..") else "_"


def _read_manifest(directory):
    try:
        with open(os.path.join(directory, MANIFEST_NAME)) as handle:
            manifest = json.load(handle)
        if manifest.get("version") == 1 and isinstance(manifest.get("orders"), dict):
            return manifest
    except (OSError, ValueError):
        pass
    return {"version": 1, "synced_at": None, "orders": {}}


def _write_manifest(directory, manifest):
    path = os.path.join(directory, MANIFEST_NAME)
    with open(path + ".tmp", "w") as handle:
        json.dump(manifest, handle, indent=2)
        handle.write("\n")
    os.replace(path + ".tmp", path)


def sync(client, directory, delete=False, on_file=None, on_bytes=None):
    """Mirrors every delivered order's files into directory/<order id>/<file name>.

    Skips files already there and verified, resumes partial ones, removes nothing unless `delete`
    (then refunded orders' directories), keeps a manifest. Answers the same report as the
    TypeScript client's `sync`.
    """
    directory = os.path.abspath(directory)
    os.makedirs(directory, exist_ok=True)
    manifest = _read_manifest(directory)
    report = {
        "orders": 0,
        "delivered": 0,
        "files": {"total": 0, "downloaded": 0, "resumed": 0, "repaired": 0, "skipped": 0, "failed": 0},
        "bytes_fetched": 0,
        "refunded": [],
        "failures": [],
        "rate_limited_responses": 0,
    }
    orders = list(client.iter_orders())
    delivered = [order for order in orders if order["status"] == "delivered"]
    report["orders"], report["delivered"] = len(orders), len(delivered)
    report["files"]["total"] = sum(len(order["files"]) for order in delivered)
    done, last_write = 0, 0.0
    for order in delivered:
        entry = manifest["orders"].setdefault(order["id"], {"name": order["name"], "status": order["status"], "files": {}})
        entry["status"] = order["status"]
        for file in order["files"]:
            dest = os.path.join(directory, order["id"], _safe_name(file["name"]))
            known = entry["files"].get(file["name"])
            recorded = known is not None and known.get("sha256") == file["sha256"] and _size(dest) == file["size"]
            if recorded or (_size(dest) >= 0 and is_verified(dest, file)):
                report["files"]["skipped"] += 1
            else:
                try:
                    result = client.download(order, file, dest, on_progress=on_bytes)
                except (VerificationError, NetworkError) as error:
                    report["files"]["failed"] += 1
                    report["failures"].append({"order": order["id"], "file": file["name"], "error": str(error)})
                    done += 1
                    continue
                except DatasetAccessError as error:
                    if error.status in (401, 403):
                        raise
                    report["files"]["failed"] += 1
                    report["failures"].append({"order": order["id"], "file": file["name"], "error": str(error)})
                    done += 1
                    continue
                report["bytes_fetched"] += result["bytes_fetched"]
                if result["restarted"]:
                    report["files"]["repaired"] += 1
                elif result["resumed_from"] > 0:
                    report["files"]["resumed"] += 1
                else:
                    report["files"]["downloaded"] += 1
            entry["files"][file["name"]] = {"id": file["id"], "sha256": file["sha256"], "size": file["size"]}
            # At most once a second while files arrive, and at the end: a killed sync loses only
            # entries of files that the next run finds on disk and verifies by their sha256.
            if time.time() - last_write >= 1:
                _write_manifest(directory, manifest)
                last_write = time.time()
            done += 1
            if on_file:
                on_file(done, report["files"]["total"])
    for order in orders:
        if order["status"] != "refunded":
            continue
        order_dir = os.path.join(directory, order["id"])
        if not os.path.isdir(order_dir):
            action = "absent"
        elif delete:
            shutil.rmtree(order_dir)
            manifest["orders"].pop(order["id"], None)
            action = "deleted"
        else:
            if order["id"] in manifest["orders"]:
                manifest["orders"][order["id"]]["status"] = "refunded"
            action = "kept"
        report["refunded"].append({"id": order["id"], "name": order["name"], "action": action})
    manifest["synced_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    _write_manifest(directory, manifest)
    report["rate_limited_responses"] = client.rate_limited_responses
    return report


# -- the command ------------------------------------------------------------------------------

EXIT_OK, EXIT_FAILED_FILES, EXIT_USAGE, EXIT_REFUSED, EXIT_NETWORK = 0, 1, 2, 3, 4


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="dataset_access.py",
        description="Dataset Access client. Environment: DATASET_ACCESS_KEY, DATASET_ACCESS_URL.",
        epilog="Exit codes: 0 done; 1 some files failed; 2 usage; 3 refused by the API; 4 network.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("orders", help="list your paid orders").add_argument("--json", action="store_true")
    download = commands.add_parser("download", help="download one file or every file of an order")
    download.add_argument("order")
    download.add_argument("file", nargs="?")
    download.add_argument("--dir", default=".")
    download.add_argument("--json", action="store_true")
    mirror = commands.add_parser("sync", help="mirror every delivered order's files into --dir")
    mirror.add_argument("--dir", required=True)
    mirror.add_argument("--delete", action="store_true", help="remove the local copies of refunded orders")
    mirror.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    as_json = args.json or not sys.stdout.isatty()
    try:
        client = Client(on_wait=None if as_json else lambda reason, s: s >= 1 and print(
            "(waiting %d s: %s)" % (s, reason.replace("_", " ")), file=sys.stderr))
        if args.command == "orders":
            orders = list(client.iter_orders())
            if as_json:
                print(json.dumps(orders, indent=2))
            else:
                for order in orders:
                    print("%s  %-10s  %4d files  %s" % (order["id"], order["status"], len(order["files"]), order["name"]))
            return EXIT_OK
        if args.command == "download":
            order = client.get_order(args.order)
            files = [f for f in order["files"] if not args.file or args.file in (f["id"], f["name"])]
            if not files:
                print("Order %s has no file %s." % (order["id"], args.file), file=sys.stderr)
                return EXIT_USAGE
            results = []
            for file in files:
                dest = os.path.join(args.dir, _safe_name(file["name"]))
                result = client.download(order, file, dest)
                results.append(dict(result, file=file["name"], path=dest))
            print(json.dumps({"order": order["id"], "files": results}, indent=2) if as_json else "\n".join(
                "%s: %s (sha256 verified)" % (r["file"], r["path"]) for r in results))
            return EXIT_OK
        progress = None
        if not as_json and sys.stderr.isatty():
            def progress(done, total):
                filled = int(30 * done / total) if total else 30
                sys.stderr.write("\r[%s%s] %d/%d files" % ("#" * filled, "-" * (30 - filled), done, total))
                if done == total:
                    sys.stderr.write("\n")
        report = sync(client, args.dir, delete=args.delete, on_file=progress)
        if as_json:
            print(json.dumps(report, indent=2))
        else:
            f = report["files"]
            print("%d delivered orders, %d files: %d downloaded, %d resumed, %d already there, %d failed."
                  % (report["delivered"], f["total"], f["downloaded"], f["resumed"], f["skipped"], f["failed"]))
        return EXIT_FAILED_FILES if report["files"]["failed"] else EXIT_OK
    except ValueError as error:
        print(error, file=sys.stderr)
        return EXIT_USAGE
    except DatasetAccessError as error:
        print("The API refused: %s: %s%s" % (error.code, error.detail,
              " (request %s)" % error.request_id if error.request_id else ""), file=sys.stderr)
        return EXIT_REFUSED
    except NetworkError as error:
        print("Network: %s" % error, file=sys.stderr)
        return EXIT_NETWORK
    except VerificationError as error:
        print(error, file=sys.stderr)
        return EXIT_FAILED_FILES


if __name__ == "__main__":
    sys.exit(main())
