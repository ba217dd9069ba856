#!/usr/bin/env python3
"""Dataset Access client: one file, Python 3.9+ standard library only (vendor it as it is).

    import dataset_access
    client = dataset_access.Client()            # DATASET_ACCESS_URL, DATASET_ACCESS_KEY
    for order in client.iter_orders():          # every page
        print(order["id"], order["status"])
    client.download(order, order["files"][0], "products.csv")   # resumable, sha256-verified
    client.download(order, "products.csv", "products.parquet", format="parquet")   # its rendition
    report = dataset_access.sync(client, "data/")               # mirror every delivered order
    frame = client.read_pandas(order, "products.csv")           # a DataFrame (needs pandas)
    contract = client.contract(order_id, "products")       # its data contract, ODCS YAML (format="json": a dict)
    rows = client.rows(order_id, "products", columns=["id", "price"], where="price > 10")   # list of dicts
    answer = client.sql(order_id, 'SELECT count(*) AS n FROM "products"', as_pandas=True)  # a DataFrame

    python3 dataset_access.py sync --dir data/ [--format parquet|csv|jsonl] [--delete] [--json]
    python3 dataset_access.py tables --order ORDER
    python3 dataset_access.py changes --order ORDER --table NAME --since N --dir changes/ [--format jsonl]
                                      [--accept-warnings]
    python3 dataset_access.py quality --order ORDER --table NAME [--version N]
    python3 dataset_access.py contract --order ORDER --table NAME [--json]
    python3 dataset_access.py rows --order ORDER --table NAME [--version N] [--columns a,b] [--where EXPR]
                                   [--order-by "col [asc|desc],..."] [--limit N] [--offset N] [--all] [--csv]
    python3 dataset_access.py sql --order ORDER --query "SELECT ..." [--limit N] [--csv]

Requests are retried on 429 and 503 after their Retry-After, on other 5xx and network errors with
jittered exponential backoff, never on other 4xx; the client paces itself from the RateLimit header
so a long sync does not meet a 429. Downloads resume a partial `<file>.part` with Range (If-Range on
its ETag), verify size and sha256, and are renamed into place only then. With a format (parquet, csv,
jsonl) a data file is fetched as the server's rendition of it, named like the server names it
(products.csv -> products.parquet) and verified by the rendition's own size and sha256; while the server
makes it, the client asks again after each Retry-After, for at most 10 minutes (`rendition_wait`).

Ids and names from the server are treated as hostile: an order or file whose id is not the API's,
whose name could reach outside the directory (`..`, `a/b`, a NUL, ...), or whose path meets a symbolic
link is skipped and reported under "refused"; nothing is created or deleted outside the directory.

Every version is judged before it goes out (its `quality`: passed, warned, or released after being held).
`changes` and read_changes_pandas stop before the first version that is not passed unless told to accept it
(--accept-warnings, accept_warnings=True); `quality` gives a version's report.

Exit codes of the command: 0 done; 1 some files failed, or were refused as unsafe, or changes stopped before a
version not passed; 2 usage; 3 refused by the API; 4 network.
"""

import argparse
import errno
import hashlib
import importlib.util
import json
import os
import random
import re
import stat
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

__all__ = [
    "Client",
    "DatasetAccessError",
    "NetworkError",
    "NoRenditionError",
    "QualityRefusedError",
    "RenditionPendingError",
    "UnsafeResponseError",
    "VerificationError",
    "rendition_name",
    "change_file_name",
    "changes",
    "CHANGES_MANIFEST_NAME",
    "sync",
    "MANIFEST_NAME",
    "RENDITION_FORMATS",
]

MANIFEST_NAME = ".dataset-access.json"
__version__ = "0.1.0"
USER_AGENT = "dataset-access-client-python/0.1"
CHUNK = 1024 * 1024
# The formats a data file can be fetched as besides its own.
RENDITION_FORMATS = ("parquet", "csv", "jsonl")
# How long a download waits in all for a rendition the server is making, in seconds.
DEFAULT_RENDITION_WAIT = 600.0


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


class UnsafeResponseError(Exception):
    """Something in the server's answer the client will not act on: an id or file name that could reach
    outside the target directory, a symbolic link in the way, a download link that is not http(s). The
    file (or order) is skipped and reported; nothing is written or deleted for it."""


class NoRenditionError(Exception):
    """The file cannot be had in the format asked: it is binary, its data could not be read, or its
    rendition could not be made (the API's 404 preview_not_available). The original still can."""


class RenditionPendingError(Exception):
    """The server is still making the rendition asked for (its 202 rendition_pending): ask again after
    `retry_after` seconds."""

    def __init__(self, message, retry_after):
        self.retry_after = retry_after
        super().__init__(message)


class QualityRefusedError(Exception):
    """A version whose quality is not "passed" (warned, or held and released) met without accept_warnings: nothing
    of it was applied. `frame` holds the changes of the versions before it (read_changes_pandas), which are."""

    def __init__(self, table, version, quality, frame=None):
        self.table, self.version, self.frame = table, version, frame
        self.status, self.reason = quality.get("status"), quality.get("reason")
        super().__init__(_not_passed_reason(table, version, quality))


def _quality_of(version):
    """A version's quality; a server from before the checks sends none, which reads as passed."""
    return version.get("quality") or {"status": "passed", "reason": None, "checks": []}


def _not_passed_reason(table, version, quality):
    reason = " (%s)" % quality["reason"] if quality.get("reason") else ""
    return ("%s version %d was not applied: its quality is %s%s, not passed; nothing of it or of later versions was "
            "applied. Read its report with quality(), and pass accept_warnings=True (--accept-warnings) to apply it."
            % (table, version, quality.get("status"), reason))


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


def _rendition_retry_seconds(value):
    """Waits between asking again for a rendition being made: Retry-After, at least 1 s (5 s without one)."""
    seconds = _retry_after_seconds(value)
    return max(1, 5 if seconds is None else seconds)


class _Pacer:
    """Requests one at a time under the server's sliding-window limit, from its RateLimit headers alone, so that a
    client alone on its account never meets a 429 (the TypeScript client's pacing.ts, for one request at a time).
    What is left never shrinks with time alone, so an answer's `r` can be spent at once; once nothing is left, one
    more request fits a slot (w/q) after the end of the window that held the last of those, then one a slot after the
    previous one's answer in every later window, and the client stays at that rate (the limit's, less a round trip
    per request) until an answer tells half the quota left."""

    def __init__(self, clock):
        self.clock = clock
        self.left = None  # what the last answer left; None: never told, not limited
        self.paced = False
        self.slot = 0.0  # seconds, w/q, once told
        self.counted = True  # whether the request in flight spent `left` (else it was paced)
        self.counted_window_end = 0.0
        self.told_window_end = 0.0
        self.last_paced_at = float("-inf")  # when the last paced request was answered

    def wait_seconds(self):
        """Seconds to wait before the next request (0: now)."""
        if not self.paced and (self.left is None or self.left > 0):
            return 0.0
        self.paced = True
        if self.slot > 0:
            at = max(self.counted_window_end + self.slot, self.last_paced_at + self.slot)
        else:
            at = max(self.told_window_end, self.last_paced_at)
        return max(0.0, at - self.clock())

    def sending(self):
        self.counted = not self.paced

    def ended(self):
        """The request in flight was answered or failed. A paced one was counted, if at all, by now: the next paced
        one waits a slot from here, so that the server counts them at least a slot apart however long each took."""
        if not self.counted:
            self.last_paced_at = self.clock()

    def answered(self, headers):
        self.ended()
        state = re.search(r"(?:^|;)\s*r=(\d+)\s*;\s*t=(\d+)", headers.get("RateLimit") or "")
        if not state:
            return
        policy = re.search(r"(?:^|;)\s*q=(\d+)\s*;\s*w=(\d+)", headers.get("RateLimit-Policy") or "")
        quota = int(policy.group(1)) if policy else 0
        if quota > 0:
            self.slot = int(policy.group(2)) / quota
        self.left = int(state.group(1))
        # `t` is rounded up and read after the server's count: never before the window's real end.
        self.told_window_end = self.clock() + int(state.group(2))
        if self.counted:
            self.counted_window_end = max(self.counted_window_end, self.told_window_end)
        if self.paced and quota > 0 and self.left >= max(2, quota / 2):
            self.paced = False


class Client:
    """A client of the Dataset Access API (a key with datasets:read)."""

    def __init__(self, base_url=None, api_key=None, max_retries=8, max_delay=60.0, sleep=time.sleep, on_wait=None,
                 rendition_wait=DEFAULT_RENDITION_WAIT, clock=time.time):
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
        self.rendition_wait = rendition_wait
        self.rate_limited_responses = 0
        self._pacer = _Pacer(clock)
        self._api = urllib.request.build_opener(_NoRedirect)

    # -- transport ------------------------------------------------------------------------

    def _wait(self, reason, seconds):
        seconds = min(seconds, self.max_delay)
        if self.on_wait:
            self.on_wait(reason, seconds)
        self.sleep(seconds)

    def _backoff(self, attempt):
        return random.uniform(0, min(self.max_delay, 0.5 * 2 ** attempt))

    def _request(self, path, accept="application/json"):
        """GET an API path: (status, headers, body bytes); a redirect is answered, not followed."""
        url = self.base + path
        for attempt in range(self.max_retries + 1):
            pause = self._pacer.wait_seconds()
            while pause > 0:  # in waits of at most max_delay each
                self._wait("pacing", min(pause, self.max_delay))
                pause -= self.max_delay
            self._pacer.sending()
            request = urllib.request.Request(
                url, headers={"Authorization": "Bearer " + self.api_key, "User-Agent": USER_AGENT, "Accept": accept}
            )
            try:
                with self._api.open(request, timeout=60) as response:
                    self._pacer.answered(response.headers)
                    return response.status, response.headers, response.read()
            except urllib.error.HTTPError as error:
                body = error.read()
                self._pacer.answered(error.headers)
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
                self._pacer.ended()
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

    def signed_link(self, order_id, file_id, format=None):
        """A fresh signed link to one file (the API's 302), not followed; with `format`, to its rendition
        (the file's own format gives the original). A rendition being made raises RenditionPendingError
        (the 202), one that cannot exist NoRenditionError (the 404)."""
        path = "/orders/%s/files/%s" % (urllib.parse.quote(order_id, safe=""), urllib.parse.quote(file_id, safe=""))
        if format:
            path += "?" + urllib.parse.urlencode({"format": format})
        try:
            status, headers, body = self._request(path)
        except DatasetAccessError as error:
            if format and error.code == "preview_not_available":
                raise NoRenditionError(error.detail) from None
            raise
        if status == 302 and headers.get("Location"):
            link = urllib.parse.urljoin(self.base + path, headers["Location"])
            # urllib opens file: (and ftp:) links too: they would read something local, not the server's file.
            scheme = urllib.parse.urlsplit(link).scheme
            if scheme not in ("http", "https"):
                raise UnsafeResponseError("the download link is not http(s) but %s:" % scheme)
            return link
        if format and status == 202:
            raise RenditionPendingError("file %s as %s is being made" % (file_id, format),
                                        _rendition_retry_seconds(headers.get("Retry-After")))
        raise _problem(status, headers, body)

    def _waited_link(self, order_id, file, format, wait):
        """The signed link to a rendition, asking again after each Retry-After while the server makes it,
        for at most `wait` seconds in all; then RenditionPendingError. Answers (link, waited): waited when
        it was not ready at first."""
        deadline = time.time() + wait
        waited = False
        while True:
            try:
                return self.signed_link(order_id, file["id"], format), waited
            except RenditionPendingError as error:
                left = deadline - time.time()
                if left <= 0:
                    raise RenditionPendingError("%s as %s: still being made when the wait for it ran out"
                                                % (file["name"], format), error.retry_after) from None
                seconds = min(error.retry_after, left)
                if self.on_wait:
                    self.on_wait("rendition", seconds)
                self.sleep(seconds)
                waited = True

    def _rendition_expected(self, order_id, file, format, stale, refresh=None):
        """The size and sha256 a rendition must have: from the order as read, unless it was not ready then
        (or the download had to wait for it); else from the order (or `refresh()`'s files) read again now."""
        listed = None if stale else _ready_rendition(file, format)
        if listed:
            return listed
        files = refresh() if refresh else self.get_order(order_id)["files"]
        fresh = [f for f in files if f["id"] == file["id"]]
        ready = fresh and _ready_rendition(fresh[0], format)
        if not ready:
            raise VerificationError("%s: the API gives no size and sha256 for its %s rendition" % (file["name"], format))
        return ready

    def _order_and_file(self, order, file):
        """The Order (given, or read by id) and its File (given, or by id or name)."""
        if isinstance(order, str):
            order = self.get_order(order)
        wanted = file["id"] if isinstance(file, dict) else file
        found = [f for f in order["files"] if f["id"] == wanted or f["name"] == wanted]
        if not found:
            raise DatasetAccessError(
                404, {"code": "file_not_found", "detail": "Order %s has no file %s." % (order["id"], wanted)}
            )
        return order, found[0]

    def download(self, order, file, dest, on_progress=None, attempts=5, format=None, rendition_wait=None,
                 _refresh=None):
        """Downloads `file` (a File object, id or name) of `order` (an Order or id) to `dest`.

        Resumes `dest.part`, verifies size and sha256, renames into place only then. With `format`
        (parquet, csv, jsonl) it fetches the file's rendition instead (its own format gives the original),
        verified by the rendition's own size and sha256, waiting while the server makes it for at most
        `rendition_wait` seconds (default: the client's) and then raising RenditionPendingError; a file
        with no rendition possible raises NoRenditionError. Answers a dict: bytes_fetched, resumed_from,
        restarted (a damaged partial file was fetched again whole), format and rendition (what the bytes
        are), size and sha256.
        """
        order, file = self._order_and_file(order, file)
        rendition = format if _is_rendition(file, format) else None
        reason = rendition and _no_rendition_reason(file, rendition)
        if reason:
            raise NoRenditionError(reason)
        expected, first_link = file, []
        if rendition:
            link, waited = self._waited_link(order["id"], file, rendition,
                                             self.rendition_wait if rendition_wait is None else rendition_wait)
            expected = self._rendition_expected(order["id"], file, rendition, waited, _refresh)
            first_link.append(link)

        def next_link():
            # The first link of a rendition is had before its sha256 is known; later attempts ask afresh.
            return first_link.pop() if first_link else self.signed_link(order["id"], file["id"], rendition)

        result = _download_verified(next_link, dest, expected, on_progress=on_progress, attempts=attempts)
        return dict(result, format=rendition or file["format"], rendition=rendition is not None,
                    size=expected["size"], sha256=expected["sha256"])

    def read_pandas(self, order, file, format=None):
        """The data of `file` (a File object, id or name) of `order` (an Order or id) as a pandas DataFrame.

        The bytes are downloaded into a temporary directory and verified by their sha256 before pandas reads
        them with its own readers; nothing is kept. `format`: None reads the original when pandas can read
        it as it is (csv, tsv, json, jsonl, gzipped or not; Parquet only with pyarrow), else the file's JSON
        Lines rendition (which keeps numbers, strings and nulls apart, unlike CSV); "parquet", "csv" or
        "jsonl" read that rendition (or the original, in its own format). Parquet needs pyarrow. Raises
        ImportError naming what to install when pandas (or pyarrow) is missing, NoRenditionError for a
        binary file or one whose data could not be read.
        """
        pandas = _import_pandas("read_pandas")
        order, file = self._order_and_file(order, file)
        with tempfile.TemporaryDirectory(prefix="dataset-access-") as directory:
            return self._read_file_frame(pandas, order, file, format, directory)

    def _read_file_frame(self, pandas, order, file, format, directory, refresh=None):
        """One file of `order` read into a DataFrame through a verified download into `directory` (see read_pandas)."""
        format = format or _pandas_format(file)
        if format == "parquet" and importlib.util.find_spec("pyarrow") is None:
            raise ImportError(_PYARROW_MISSING, name="pyarrow")
        path = os.path.join(directory, file["id"])
        result = self.download(order, file, path, format=format, _refresh=refresh)
        compression = None if result["rendition"] else file.get("compression")
        try:
            return _read_frame(pandas, path, result["format"], compression)
        finally:
            os.remove(path)

    # -- tables, versions and the change feed ------------------------------------------------

    def _table_path(self, order_id, table):
        return "/orders/%s/tables/%s" % (urllib.parse.quote(order_id, safe=""), urllib.parse.quote(table, safe=""))

    def tables(self, order_id):
        """The order's tables, each as of its current version: {name, mode, key, version, rows, columns, updated_at}."""
        return self.get_order(order_id).get("tables") or []

    def table(self, order_id, table):
        """One table of the order, as of its current version (404 table_not_found when there is none of that name)."""
        return self._json(self._table_path(order_id, table))

    def iter_versions(self, order_id, table, page_size=50):
        """Every kept version of a table (pruned ones are gone), newest first, page by page: each
        {version, mode, created_at, rows, columns, changes, files}."""
        offset = 0
        while offset is not None:
            page = self._json(self._table_path(order_id, table) + "/versions?"
                              + urllib.parse.urlencode({"limit": page_size, "offset": offset}))
            for version in page["data"]:
                yield version
            offset = page["next_offset"]

    def versions(self, order_id, table):
        """Every kept version of a table, newest first, as a list (see iter_versions)."""
        return list(self.iter_versions(order_id, table))

    def version(self, order_id, table, version):
        """One version of a table (404 version_not_found when it was never made, or was pruned)."""
        return self._json("%s/versions/%d" % (self._table_path(order_id, table), int(version)))

    def quality(self, order_id, table, version=None):
        """A version's quality report (default: the current version's, read from the table first): {rows,
        previous_rows, changes, added_columns, columns: [{name, type, null_fraction, previous_null_fraction,
        distinct, previous_distinct, min, max, mean, psi}], checks: [{name, column, value, threshold, level,
        outcome}]}."""
        if version is None:
            version = self.table(order_id, table)["version"]
            if version is None:
                raise DatasetAccessError(404, {"code": "version_not_found",
                                               "detail": "Table %s has no version yet." % table})
        return self._json("%s/versions/%d/quality" % (self._table_path(order_id, table), int(version)))

    def contract(self, order_id, table, format="yaml"):
        """The table's data contract (ODCS v3.1.0: its columns and key, the data dictionary, the quality checks, the
        cadence), made by the server from what the table is now: the YAML text as served (no YAML parser is needed,
        nor used), or with format="json" the JSON document as a dict."""
        if format not in ("yaml", "json"):
            raise ValueError('format must be "yaml" or "json", not %r.' % (format,))
        status, headers, body = self._request(self._table_path(order_id, table) + "/contract",
                                              accept="application/" + format)
        if status != 200:
            raise _problem(status, headers, body)
        return json.loads(body) if format == "json" else body.decode("utf-8")

    def changes_link(self, order_id, table, version, format="parquet"):
        """A fresh signed link to a version's change file (parquet, or its csv or jsonl form), not followed;
        RenditionPendingError (the 202) while the server makes it."""
        path = "%s/versions/%d/changes?%s" % (self._table_path(order_id, table), int(version),
                                                urllib.parse.urlencode({"format": format}))
        status, headers, body = self._request(path)
        if status == 302 and headers.get("Location"):
            link = urllib.parse.urljoin(self.base + path, headers["Location"])
            scheme = urllib.parse.urlsplit(link).scheme
            if scheme not in ("http", "https"):
                raise UnsafeResponseError("the download link is not http(s) but %s:" % scheme)
            return link
        if status == 202:
            raise RenditionPendingError("the change file of %s version %s as %s is being made" % (table, version, format),
                                        _rendition_retry_seconds(headers.get("Retry-After")))
        raise _problem(status, headers, body)

    def download_changes(self, order_id, table, version, dest, format="parquet", wait=None, on_progress=None,
                         attempts=5):
        """Downloads a version's change file to `dest`: waits while the server makes it (each 202's Retry-After,
        at most `wait` seconds, default the client's rendition_wait), resumes `dest.part`, checks the bytes
        against the size the link answers and the sha256 its ETag gives when it is one (this server's links;
        the API gives no sha256 for change files). Answers a dict: bytes_fetched, resumed_from, restarted,
        size, sha256 (computed of what was written) and verified_by ("sha256" or "size")."""
        deadline = time.time() + (self.rendition_wait if wait is None else wait)
        links = []
        while not links:
            try:
                links.append(self.changes_link(order_id, table, version, format))
            except RenditionPendingError as error:
                left = deadline - time.time()
                if left <= 0:
                    raise RenditionPendingError("the change file of %s version %s as %s: still being made when the "
                                                "wait for it ran out" % (table, version, format), error.retry_after)
                seconds = min(error.retry_after, left)
                if self.on_wait:
                    self.on_wait("rendition", seconds)
                self.sleep(seconds)

        def next_link():
            return links.pop() if links else self.changes_link(order_id, table, version, format)

        return _download_verified(next_link, dest, None, on_progress=on_progress, attempts=attempts)

    def read_table_pandas(self, order_id, table, version=None):
        """A table as one pandas DataFrame: every part of `version` (default: the current one) read as
        read_pandas reads a file (verified by its sha256; Parquet parts through their JSON Lines rendition
        when pyarrow is missing) and concatenated in name order. For an append table, the table as of that
        version: the parts of every kept version up to it."""
        pandas = _import_pandas("read_table_pandas")
        if version is None:
            version = self.table(order_id, table)["version"]
            if version is None:
                raise DatasetAccessError(404, {"code": "version_not_found",
                                               "detail": "Table %s has no version yet." % table})
        chosen = self.version(order_id, table, version)
        versions = [chosen]
        if chosen["mode"] == "append":
            versions = sorted((v for v in self.iter_versions(order_id, table) if v["version"] <= chosen["version"]),
                              key=lambda v: v["version"])
        frames = []
        with tempfile.TemporaryDirectory(prefix="dataset-access-") as directory:
            for each in versions:
                order = {"id": order_id, "files": each["files"]}

                def refresh(number=each["version"]):
                    return self.version(order_id, table, number)["files"]

                for file in each["files"]:
                    frames.append(self._read_file_frame(pandas, order, file, None, directory, refresh))
        columns = [column["name"] for column in chosen["columns"]]
        if not frames:
            return pandas.DataFrame(columns=columns)
        return pandas.concat(frames, ignore_index=True)[columns]

    def read_changes_pandas(self, order_id, table, since_version, accept_warnings=False):
        """What changed in a table after `since_version`, as one pandas DataFrame: the change files of every
        later version, oldest first, with the table's columns, `_change_type` (insert, delete,
        update_preimage, update_postimage), `_commit_version` and `_commit_timestamp` (the version's
        created_at, UTC), as Delta's change data feed has them. Parquet with pyarrow, else the change files'
        JSON Lines form. A version after `since_version` that was pruned raises DatasetAccessError
        (version_not_found): its changes cannot be had, read the table whole instead. A version whose quality is
        not "passed" raises QualityRefusedError unless accept_warnings=True: nothing of it is in the error's
        `frame`, which holds the changes of the versions before it."""
        pandas = _import_pandas("read_changes_pandas")
        current = self.table(order_id, table)["version"] or 0
        wanted = sorted((v for v in self.iter_versions(order_id, table) if v["version"] > since_version),
                        key=lambda v: v["version"])
        missing = sorted(set(range(int(since_version) + 1, current + 1)) - {v["version"] for v in wanted})
        if missing:
            raise DatasetAccessError(404, {"code": "version_not_found", "detail": (
                "Table %s: versions %s were pruned, so the changes since version %s cannot be had; read the "
                "table's current version whole instead." % (table, ", ".join(map(str, missing)), since_version))})
        format = "parquet" if importlib.util.find_spec("pyarrow") is not None else "jsonl"
        frames = []
        refused = None
        with tempfile.TemporaryDirectory(prefix="dataset-access-") as directory:
            for each in wanted:
                if not accept_warnings and _quality_of(each)["status"] != "passed":
                    refused = each
                    break
                path = os.path.join(directory, "v%d.%s" % (each["version"], format))
                result = self.download_changes(order_id, table, each["version"], path, format=format)
                columns = [column["name"] for column in each["columns"]] + ["_change_type"]
                if result["size"] == 0 or (format == "jsonl" and not _has_a_line(path)):
                    frame = pandas.DataFrame(columns=columns)
                else:
                    frame = _read_frame(pandas, path, format, None)
                os.remove(path)
                frame["_commit_version"] = each["version"]
                frame["_commit_timestamp"] = pandas.Timestamp(each["created_at"])
                frames.append(frame)
        if not frames:
            columns = [column["name"] for column in self.table(order_id, table).get("columns") or []]
            result = pandas.DataFrame(columns=columns + ["_change_type", "_commit_version", "_commit_timestamp"])
        else:
            result = pandas.concat(frames, ignore_index=True)
        if refused is not None:
            raise QualityRefusedError(table, refused["version"], _quality_of(refused), result)
        return result

    # -- rows and SQL, read on the server ------------------------------------------------------

    def rows_page(self, order_id, table, version=None, columns=None, where=None, order_by=None, limit=None,
                  offset=0):
        """One page of a table's rows, filtered on the server: {version, columns: [{name, type}], rows: [[...]],
        next_offset} (next_offset None on the last page). `columns` a list of names (default all), `where` one
        condition over them (docs/explore.md), `order_by` "col [asc|desc], ..." (default the key, else file
        order), `limit` 1..1000 (default 100)."""
        query = {"offset": int(offset)}
        for name, value in (("version", version), ("where", where), ("order_by", order_by), ("limit", limit)):
            if value is not None:
                query[name] = value
        if columns is not None:
            query["columns"] = ",".join(columns)
        return self._json(self._table_path(order_id, table) + "/rows?" + urllib.parse.urlencode(query))

    def rows(self, order_id, table, version=None, columns=None, where=None, order_by=None, limit=None, offset=0,
             all=False, as_pandas=False):
        """A table's rows through a filter, read on the server (see rows_page), as a list of dicts, or a pandas
        DataFrame with `as_pandas=True`. With `all=True` every matching row from `offset` on, page after page
        (`limit` rows a page), every page read from the version of the first so the pages fit together."""
        pandas = _import_pandas("rows") if as_pandas else None
        page = self.rows_page(order_id, table, version, columns, where, order_by, limit, offset)
        names = [column["name"] for column in page["columns"]]
        found = list(page["rows"])
        while all and page["next_offset"] is not None:
            page = self.rows_page(order_id, table, page["version"], columns, where, order_by, limit,
                                  page["next_offset"])
            found.extend(page["rows"])
        return _records(pandas, names, found)

    def sql(self, order_id, query, limit=None, as_pandas=False):
        """One read-only SELECT over the order's tables (each by its name, "name@N" for version N, "name@changes"
        for the change feed), run on the server, as a list of dicts, or a pandas DataFrame with `as_pandas=True`.
        At most `limit` rows (1..1000, default 100): sql_result says whether more exist."""
        pandas = _import_pandas("sql") if as_pandas else None
        result = self.sql_result(order_id, query, limit)
        return _records(pandas, [column["name"] for column in result["columns"]], result["rows"])

    def sql_result(self, order_id, query, limit=None):
        """The SQL answer as the API gives it: {columns: [{name, type}], rows: [[...]], truncated}."""
        params = {"q": query}
        if limit is not None:
            params["limit"] = limit
        return self._json("/orders/%s/sql?%s" % (urllib.parse.quote(order_id, safe=""), urllib.parse.urlencode(params)))


def _records(pandas, names, rows):
    """Rows (arrays in column order) as dicts, or as a DataFrame when `pandas` is given. Values stay as the API
    gives them (dates ISO 8601 text, big integers and decimals as strings)."""
    if pandas is not None:
        return pandas.DataFrame(rows, columns=names)
    return [dict(zip(names, row)) for row in rows]


def _problem(status, headers, body):
    try:
        problem = json.loads(body.decode("utf-8"))
        if not isinstance(problem, dict):
            problem = {}
    except (ValueError, UnicodeDecodeError):
        problem = {}
    problem.setdefault("request_id", headers.get("X-Request-Id") if headers else None)
    return DatasetAccessError(status, problem)


# Windows has no O_NOFOLLOW: there the lstat of _partial_size stands alone.
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _symlink_refused(path):
    return UnsafeResponseError("%s is a symbolic link: nothing is written through one" % os.path.basename(path))


def _open_no_follow(path, flags, mode):
    """Opens a file the download writes or reads without following a symbolic link in its place: one
    planted there (`x.part -> ~/.bashrc`) must not be written through, nor its target sent as If-Range."""
    try:
        return os.fdopen(os.open(path, flags | _NO_FOLLOW, 0o666), mode)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise _symlink_refused(path) from None
        raise


def _size(path):
    """The size of a regular file (not a symbolic link), else -1."""
    try:
        info = os.lstat(path)
    except OSError:
        return -1
    return info.st_size if stat.S_ISREG(info.st_mode) else -1


def _partial_size(path):
    """The size of the partial file (0: none); a symbolic link there is refused."""
    if os.path.islink(path):
        raise _symlink_refused(path)
    return max(0, _size(path))


def _hash_file(path):
    digest = hashlib.sha256()
    with _open_no_follow(path, os.O_RDONLY, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
    return digest


def _sha256(path):
    return _hash_file(path).hexdigest()


def is_verified(path, expected):
    """Whether `path` is a file (not a symbolic link) with this size and sha256."""
    return _size(path) == expected["size"] and _sha256(path) == expected["sha256"]


def _read_etag(path):
    try:
        with _open_no_follow(path, os.O_RDONLY, "r") as handle:
            return handle.read().strip()
    except FileNotFoundError:
        return None


_SHA256_ETAG = re.compile(r'"([0-9a-f]{64})"')
_RANGE_TOTAL = re.compile(r"/(\d+)\s*$")


def _range_total(value):
    """The whole size from Content-Range (`bytes 0-9/1234`, `bytes */1234`), or None."""
    match = _RANGE_TOTAL.search(value or "")
    return int(match.group(1)) if match else None


def _download_verified(signed_link, dest, expected, on_progress=None, attempts=5):
    """Fetches a signed link into `dest` (see Client.download). A symbolic link where `dest.part` or its
    ETag file goes is refused (UnsafeResponseError), never written through. `expected` None (a change
    file, of which the API gives no sha256): the size is the answer's (Content-Length, Content-Range) and
    the sha256 its strong ETag when that is one (this server's links); else the sha256 is only computed.
    Answers bytes_fetched, resumed_from, restarted, size, sha256 and verified_by."""
    os.makedirs(os.path.dirname(os.path.abspath(dest)), exist_ok=True)
    part, etag_file = dest + ".part", dest + ".part.etag"
    learning = expected is None
    want = {"size": None, "sha256": None} if learning else {"size": expected["size"], "sha256": expected["sha256"]}
    fetched, resumed_from, restarted = 0, None, False
    attempt = 0
    while True:
        attempt += 1
        have = _partial_size(part)
        if want["size"] is not None and have > want["size"]:
            os.remove(part)
            have = 0
        if resumed_from is None:
            resumed_from = have
        running = None
        try:
            if want["size"] is None or have < want["size"]:
                headers = {"User-Agent": USER_AGENT}
                if have > 0:
                    headers["Range"] = "bytes=%d-" % have
                    etag = _read_etag(etag_file)
                    if etag:
                        headers["If-Range"] = etag
                request = urllib.request.Request(signed_link(), headers=headers)
                try:
                    response = urllib.request.urlopen(request, timeout=60)
                except urllib.error.HTTPError as error:
                    if error.code != 416:
                        raise NetworkError("the download link answered %d" % error.code)
                    if learning:
                        want["size"] = _range_total(error.headers.get("Content-Range"))
                    if want["size"] is None:
                        raise NetworkError("the download link answered 416 without the size")
                    response = None
                if response is not None:
                    with response:
                        append = response.status == 206 and have > 0
                        if learning:
                            length = response.headers.get("Content-Length")
                            want["size"] = (_range_total(response.headers.get("Content-Range")) if append
                                            else int(length) if length and length.isdigit() else None)
                            tag = _SHA256_ETAG.fullmatch(response.headers.get("ETag") or "")
                            want["sha256"] = tag.group(1) if tag else None
                        if response.headers.get("ETag"):
                            with _open_no_follow(etag_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, "w") as handle:
                                handle.write(response.headers["ETag"])
                        # The sha256 as the file grows: the bytes already on disk, then each chunk written.
                        running = _hash_file(part) if append else hashlib.sha256()
                        flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
                        with _open_no_follow(part, flags, "ab" if append else "wb") as out:
                            for chunk in iter(lambda: response.read(CHUNK), b""):
                                out.write(chunk)
                                running.update(chunk)
                                fetched += len(chunk)
                                if on_progress:
                                    on_progress(len(chunk))
            size = _partial_size(part)
            complete = want["size"] is None or size == want["size"]
            digest = (running.hexdigest() if running else _sha256(part)) if complete else None
            if not complete or (want["sha256"] is not None and digest != want["sha256"]):
                for leftover in (part, etag_file):
                    if os.path.exists(leftover):
                        os.remove(leftover)
                if resumed_from > 0 and not restarted:
                    restarted, resumed_from = True, 0
                    continue
                raise VerificationError(
                    "%s: got %d bytes%s, expected %s bytes%s"
                    % (os.path.basename(dest), size, " with sha256 " + digest if digest else "",
                       "?" if want["size"] is None else want["size"],
                       " with sha256 " + want["sha256"] if want["sha256"] else "")
                )
            os.replace(part, dest)
            if os.path.exists(etag_file):
                os.remove(etag_file)
            return {"bytes_fetched": fetched, "resumed_from": resumed_from, "restarted": restarted, "size": size,
                    "sha256": digest, "verified_by": "sha256" if want["sha256"] is not None else "size"}
        except (NetworkError, urllib.error.URLError, OSError) as error:
            if attempt >= attempts:
                raise error if isinstance(error, NetworkError) else NetworkError(str(error))
            time.sleep(random.uniform(0, 0.5 * 2 ** attempt))


# -- what the server names is hostile ---------------------------------------------------------
# A server that is not the real one must not make the client write or delete anything outside the
# directory it was given. An unsafe name is refused, never rewritten into another that could collide.

_ORDER_ID = re.compile(r"ord_[0-9a-f]{32}")  # the API's ids (lib/ids.ts): typed prefix, 32 hex digits
_FILE_ID = re.compile(r"fil_[0-9a-f]{32}")
# The longest name whose `<name>.part.etag` still fits the 255 bytes file systems allow a name.
MAX_NAME_BYTES = 255 - len(".part.etag")
# C0, DEL and C1: a NUL cuts a path short, the others can drive a terminal.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
# Half a surrogate pair (json.loads lets one through) is no character and has no UTF-8 form.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _order_id_problem(order_id):
    if isinstance(order_id, str) and _ORDER_ID.fullmatch(order_id):
        return None
    return "not an order id (ord_ and 32 hex digits)"


def _file_id_problem(file_id):
    if isinstance(file_id, str) and _FILE_ID.fullmatch(file_id):
        return None
    return "not a file id (fil_ and 32 hex digits)"


def _name_problem(name):
    """Why `name` cannot name a file inside a directory, or None when it can."""
    if not isinstance(name, str):
        return "the name is not a string"
    if name == "":
        return "the name is empty"
    if name in (".", ".."):
        return 'the name is "%s"' % name
    if "/" in name or "\\" in name:
        return "the name contains a path separator (/ or \\)"
    if _CONTROL.search(name):
        return "the name contains a control character"
    if _LONE_SURROGATE.search(name):
        return "the name is not valid Unicode"
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        return "the name is longer than %d bytes" % MAX_NAME_BYTES
    return None


class _DirectoryNames:
    """The names taken in one directory: each file's and its partial download's, letter case aside (the
    file systems of macOS and Windows ignore it). A second file of a taken name is refused rather than
    written over the first."""

    def __init__(self):
        self._taken = set()

    def claim(self, name):
        """Takes `name`, `name.part` and `name.part.etag`, or answers why it cannot."""
        names = [(name + suffix).lower() for suffix in ("", ".part", ".part.etag")]
        if any(each in self._taken for each in names):
            return "another file here has the same name, or this name is its partial download's"
        self._taken.update(names)
        return None


def _unsafe_file_problem(file):
    """Why a file of the server's answer cannot be written anywhere (its id or name is unsafe), or None."""
    return _file_id_problem(file.get("id")) or _name_problem(file.get("name"))


def _target_directory(directory):
    """The real path of the directory everything goes into, created if need be."""
    os.makedirs(directory, exist_ok=True)
    return os.path.realpath(directory)


def _path_inside(root, *names):
    """`root/name/...` once it is sure to stay inside `root` (a real path, see _target_directory): each
    name safe, and nothing on the way below root a symbolic link (which could lead anywhere). Checked
    before anything there is created, written or deleted; raises UnsafeResponseError otherwise."""
    current = root
    for name in names:
        problem = _name_problem(name)
        if problem:
            raise UnsafeResponseError(problem)
        current = os.path.join(current, name)
        if os.path.islink(current):
            raise UnsafeResponseError(
                "%s is a symbolic link: nothing is written or deleted through one" % os.path.relpath(current, root)
            )
    return current


def _remove_regular_file(path):
    """Removes `path` if it is a regular file (what this tool writes; a link or directory stays)."""
    if _size(path) < 0:
        return False
    os.remove(path)
    return True


# -- formats ----------------------------------------------------------------------------------

# A data extension, gzipped or not, that a rendition's name replaces.
_DATA_EXTENSION = re.compile(r"(\.(csv|tsv|tab|json|jsonl|ndjson))?(\.gz)?\Z", re.IGNORECASE)
_PARQUET_EXTENSION = re.compile(r"\.parquet\Z", re.IGNORECASE)


def rendition_name(name, format):
    """A rendition's file name, as the server names its download: the original's name with its data
    extension (and .gz, or .parquet) replaced, products.csv.gz -> products.parquet. Made here rather than
    read from the download, so a partial download has its name before the first byte; it is then checked
    like any name from the server."""
    stem = _PARQUET_EXTENSION.sub("", _DATA_EXTENSION.sub("", name, count=1), count=1)
    return "%s.%s" % (stem or "data", format)


def _is_rendition(file, format):
    """Whether fetching `file` as `format` means its rendition (not the original: no format, or its own)."""
    return format is not None and format != file.get("format")


def _local_name(file, format):
    return rendition_name(file["name"], format) if _is_rendition(file, format) else file["name"]


def _rendition_of(file, format):
    """The order's entry for `file`'s rendition in `format` (none from a server that lists no renditions)."""
    renditions = file.get("renditions")
    if not isinstance(renditions, list):
        return None
    return next((r for r in renditions if isinstance(r, dict) and r.get("format") == format), None)


def _no_rendition_reason(file, format):
    """Why `file` can never be had as `format`, read from the order (no request needed), or None: binary
    files and files whose data could not be read have no renditions (the API answers 404
    preview_not_available), and a rendition that failed stays failed."""
    if file.get("format") == "binary":
        return "a binary file has no %s rendition (the original can be downloaded as it is)" % format
    if file.get("profile_status") == "failed":
        return "its data could not be read: %s" % (file.get("profile_error") or "no reason given")
    if (_rendition_of(file, format) or {}).get("status") == "failed":
        return "its %s rendition could not be made" % format
    return None


def _ready_rendition(file, format):
    """The size and sha256 the API gives for a ready rendition of `file`, or None (none, or not ready)."""
    rendition = _rendition_of(file, format) or {}
    if rendition.get("status") != "ready" or rendition.get("size") is None or rendition.get("sha256") is None:
        return None
    return {"size": rendition["size"], "sha256": rendition["sha256"]}


def _expected_bytes(file, format):
    """What `file` fetched as `format` must end as: the original's size and sha256, or its rendition's (None
    while the rendition is not made: known once the server has made it)."""
    return _ready_rendition(file, format) if _is_rendition(file, format) else file


def _plan_directory(files, format):
    """The files of one order as they go into one directory in `format` (None: as they are): for each,
    {"file", "name"} (its name there) and "refused" (an unsafe id or name, or one taken) or "no_rendition"
    (why it has none in `format`) when so. Files fetched as they are claim their names before renditions
    do, so a rendition (products.csv as parquet) never takes the name of a file delivered under it
    (products.parquet): the rendition is refused instead. A file with no rendition possible claims none."""
    names = _DirectoryNames()
    originals_first = [f for f in files if not _is_rendition(f, format)] + [f for f in files if _is_rendition(f, format)]
    planned = []
    for file in originals_first:
        unsafe = _unsafe_file_problem(file)
        if unsafe:
            planned.append({"file": file, "name": str(file.get("name")), "refused": unsafe})
            continue
        rendition = _is_rendition(file, format)
        name = _local_name(file, format)
        entry = {"file": file, "name": name}
        no_rendition = rendition and _no_rendition_reason(file, format)
        if no_rendition:
            entry["no_rendition"] = no_rendition
        elif not rendition:
            taken = names.claim(name)
            if taken:
                entry["refused"] = taken
        else:
            # The rendition's name is the server's name changed: checked again (.parquet may make it too long).
            problem = _name_problem(name) or names.claim(name)
            if problem:
                entry["refused"] = 'as %s it would be named "%s": %s' % (format, name, problem)
        planned.append(entry)
    return planned


def _deferring_pending(items, wait, fetch_one):
    """Runs fetch_one(item, wait_seconds, final) over `items` without waiting for renditions being made (it
    raises RenditionPendingError: the item is put aside), then comes back to those (final=True), each with
    what is left of `wait` since it was first asked for. Asked for all at once, the server makes them in
    the meantime, rather than each only after the wait for the one before."""
    later = []
    for item in items:
        since = time.time()
        try:
            fetch_one(item, 0, False)
        except RenditionPendingError:
            later.append((item, since))
    for item, since in later:
        fetch_one(item, max(0.0, since + wait - time.time()), True)


# -- pandas -----------------------------------------------------------------------------------

_PANDAS_MISSING = ("%s needs pandas, which is not installed for this Python (%s): "
                   "apt-get install python3-pandas (Debian, Ubuntu) or pip install pandas")
_PYARROW_MISSING = ("reading Parquet into pandas needs pyarrow, which is not installed for this Python: "
                    "pip install pyarrow; or read the file with format='jsonl' or format='csv'")


def _import_pandas(method):
    """pandas, imported only when asked for: the rest of this module needs nothing beyond the standard library.
    `method` names the caller in the error (read_pandas, read_table_pandas, read_changes_pandas)."""
    try:
        import pandas
    except ImportError:
        raise ImportError(_PANDAS_MISSING % (method, sys.executable), name="pandas") from None
    return pandas


def _pandas_format(file):
    """The format read_pandas fetches `file` in by default: None (the original) when pandas reads it as it
    is, else its JSON Lines rendition (Parquet without pyarrow)."""
    if file.get("format") == "binary":
        raise NoRenditionError("%s is a binary file, not a table pandas can read" % file["name"])
    if file.get("format") == "parquet" and importlib.util.find_spec("pyarrow") is None:
        return "jsonl"
    return None


def _has_a_line(path):
    """Whether a JSON Lines file holds a row (pandas' reader refuses an empty file)."""
    with open(path, "rb") as handle:
        return any(line.strip() for line in handle)


def _read_frame(pandas, path, format, compression):
    """A verified file of `format` (as the API names formats) read with pandas' own reader for it."""
    if format == "csv":
        return pandas.read_csv(path, compression=compression)
    if format == "tsv":
        return pandas.read_csv(path, sep="\t", compression=compression)
    if format == "json":
        return pandas.read_json(path, orient="records", compression=compression)
    if format == "jsonl":
        return pandas.read_json(path, lines=True, compression=compression)
    if format == "parquet":
        return pandas.read_parquet(path)
    raise NoRenditionError("a %s file is not a table pandas can read" % format)


# -- sync -------------------------------------------------------------------------------------


def _read_manifest(directory):
    try:
        with open(os.path.join(directory, MANIFEST_NAME)) as handle:
            manifest = json.load(handle)
        if manifest.get("version") == 1 and isinstance(manifest.get("orders"), dict):
            return manifest
    except (OSError, ValueError):
        pass
    return {"version": 1, "synced_at": None, "orders": {}}


def _write_manifest(directory, manifest, name=MANIFEST_NAME):
    path = os.path.join(directory, name)
    with open(path + ".tmp", "w") as handle:
        json.dump(manifest, handle, indent=2)
        handle.write("\n")
    os.replace(path + ".tmp", path)


def _record_of(file, format, expected):
    """What the manifest records of a file on disk whose bytes are `expected`: the API's file, and whether
    they are the original (rendition False, format the file's own) or a rendition the server made."""
    rendition = _is_rendition(file, format)
    return {"id": file["id"], "sha256": expected["sha256"], "size": expected["size"],
            "format": format if rendition else file.get("format"), "rendition": rendition}


def _sync_file(client, root, item, report, format, wait, final, on_bytes):
    """One file of a delivered order: skipped (already there, when its sha256 is known), downloaded, failed,
    or without a rendition. A rendition still being made raises RenditionPendingError unless `final`, where
    it is a failure."""
    order, file, name, entry = item["order"], item["file"], item["name"], item["entry"]
    dest = _path_inside(root, order["id"], name)
    expected = _expected_bytes(file, format)
    known = entry["files"].get(name)
    if expected is not None:
        recorded = known is not None and known.get("sha256") == expected["sha256"] and _size(dest) == expected["size"]
        if recorded or (_size(dest) >= 0 and is_verified(dest, expected)):
            report["files"]["skipped"] += 1
            entry["files"][name] = _record_of(file, format, expected)
            return
    try:
        result = client.download(order, file, dest, on_progress=on_bytes, format=format, rendition_wait=wait)
    except NoRenditionError as error:
        # The order said a rendition was possible, the API says not (the file changed since).
        _note_no_rendition(report, order, file, str(error))
        return
    except (VerificationError, NetworkError, DatasetAccessError, RenditionPendingError) as error:
        if isinstance(error, RenditionPendingError) and not final:
            raise
        if isinstance(error, DatasetAccessError) and error.status in (401, 403):
            raise
        report["files"]["failed"] += 1
        report["failures"].append({"order": order["id"], "file": file["name"], "error": str(error)})
        return
    report["bytes_fetched"] += result["bytes_fetched"]
    if result["restarted"]:
        report["files"]["repaired"] += 1
    elif result["resumed_from"] > 0:
        report["files"]["resumed"] += 1
    else:
        report["files"]["downloaded"] += 1
    entry["files"][name] = _record_of(file, format, result)


def _note_no_rendition(report, order, file, reason):
    report["files"]["no_rendition"] += 1
    report["no_rendition"].append({"order": order["id"], "file": file["name"], "reason": reason})


def _settle_superseded(root, order, manifest, delete, report, refuse):
    """The files the manifest records for a delivered order whose id left its `files` list (a new snapshot
    version replaced them, or, synced from an older server, they were parts of a failed or rejected publication):
    reported as kept, or with `delete` removed (regular files only)."""
    entry = manifest["orders"].get(order.get("id"))
    if not entry or _order_id_problem(order.get("id")):
        return
    listed = {file.get("id") for file in order["files"]}
    for name, recorded in list(entry["files"].items()):
        if recorded.get("id") in listed:
            continue
        if not delete:
            report["superseded"].append({"order": order["id"], "file": name, "action": "kept"})
            continue
        try:
            _remove_regular_file(_path_inside(root, order["id"], name))
        except UnsafeResponseError as error:
            refuse(order, name, str(error))
            continue
        del entry["files"][name]
        report["superseded"].append({"order": order["id"], "file": name, "action": "deleted"})


def _settle_refunded(root, order, manifest, delete, refuse):
    """A refunded order's local copy: reported, and with `delete` what this tool wrote of it removed: the
    files the manifest records there, then the directory if nothing else is left in it."""
    summary = {"id": str(order.get("id")), "name": order.get("name")}
    try:
        problem = _order_id_problem(order.get("id"))
        if problem:
            raise UnsafeResponseError(problem)
        order_dir = _path_inside(root, order["id"])
    except UnsafeResponseError as error:
        refuse(order, None, str(error))
        return dict(summary, action="refused")
    if not os.path.isdir(order_dir):
        return dict(summary, action="never_downloaded")
    entry = manifest["orders"].get(order["id"])
    if not delete:
        if entry:
            entry["status"] = "refunded"
        return dict(summary, action="kept")
    deleted = []
    for name in (entry or {}).get("files", {}):
        try:
            if _remove_regular_file(_path_inside(root, order["id"], name)):
                deleted.append(name)
        except UnsafeResponseError as error:
            refuse(order, name, str(error))
    manifest["orders"].pop(order["id"], None)
    left = sorted(os.listdir(order_dir))
    if not left:
        os.rmdir(order_dir)
    return dict(summary, action="deleted", deleted=deleted, left=left)


def sync(client, directory, delete=False, on_file=None, on_bytes=None, format=None):
    """Mirrors every delivered order's files into directory/<order id>/<file name>: its `files` list, which holds
    binary files and the parts of each table's current version, never a publication that is not a version.

    Skips files already there and verified, resumes partial ones, removes nothing unless `delete`
    (then what the manifest says this tool wrote for refunded orders), keeps a manifest. With `format`
    (parquet, csv, jsonl) each data file is fetched as that rendition (products.csv -> products.parquet),
    verified by the rendition's own size and sha256; files with none possible are listed in the report's
    "no_rendition", and renditions being made are come back to after the other files, waiting at most
    the client's `rendition_wait` for each. An order or file whose id is not the API's, whose name is
    unsafe, or whose path meets a symbolic link is skipped and listed in the report's "refused". Answers
    the same report as the TypeScript client's `sync`.
    """
    root = _target_directory(directory)
    manifest = _read_manifest(root)
    report = {
        "format": format,
        "orders": 0,
        "delivered": 0,
        "files": {"total": 0, "downloaded": 0, "resumed": 0, "repaired": 0, "skipped": 0, "failed": 0, "refused": 0,
                  "no_rendition": 0},
        "bytes_fetched": 0,
        "refunded": [],
        "superseded": [],
        "failures": [],
        "refused": [],
        "no_rendition": [],
        "rate_limited_responses": 0,
    }

    def refuse(order, file_name, reason):
        report["refused"].append({"order": str(order.get("id")), "file": file_name, "reason": reason})

    orders = list(client.iter_orders())
    delivered = [order for order in orders if order["status"] == "delivered"]
    report["orders"], report["delivered"] = len(orders), len(delivered)
    total = report["files"]["total"] = sum(len(order["files"]) for order in delivered)
    done, last_write = 0, 0.0

    def progress():
        nonlocal done
        done += 1
        if on_file:
            on_file(done, total)

    items = []
    for order in delivered:
        order_problem = _order_id_problem(order.get("id"))
        if order_problem:
            refuse(order, None, order_problem)
            report["files"]["refused"] += len(order["files"])
            for _ in order["files"]:
                progress()
            continue
        entry = manifest["orders"].setdefault(order["id"], {"name": order["name"], "status": order["status"], "files": {}})
        entry["status"] = order["status"]
        for planned in _plan_directory(order["files"], format):
            if "refused" in planned:
                report["files"]["refused"] += 1
                refuse(order, str(planned["file"].get("name")), planned["refused"])
            elif "no_rendition" in planned:
                _note_no_rendition(report, order, planned["file"], planned["no_rendition"])
            else:
                items.append(dict(planned, order=order, entry=entry))
                continue
            progress()

    def fetch_one(item, wait, final):
        nonlocal last_write
        try:
            _sync_file(client, root, item, report, format, wait, final, on_bytes)
        except UnsafeResponseError as error:
            report["files"]["refused"] += 1
            refuse(item["order"], item["file"]["name"], str(error))
        # At most once a second while files arrive, and at the end: a killed sync loses only
        # entries of files that the next run finds on disk and verifies by their sha256.
        if time.time() - last_write >= 1:
            _write_manifest(root, manifest)
            last_write = time.time()
        progress()

    _deferring_pending(items, client.rendition_wait, fetch_one)
    for order in delivered:
        _settle_superseded(root, order, manifest, delete, report, refuse)
    for order in orders:
        if order["status"] == "refunded":
            report["refunded"].append(_settle_refunded(root, order, manifest, delete, refuse))
    manifest["synced_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    _write_manifest(root, manifest)
    report["rate_limited_responses"] = client.rate_limited_responses
    return report


# -- change files ---------------------------------------------------------------------------

CHANGES_MANIFEST_NAME = ".dataset-access-changes.json"
_TABLE_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")


def change_file_name(table, version, format):
    """The name a version's change file gets on disk: products.v7.changes.parquet."""
    return "%s.v%d.changes.%s" % (table, version, format)


def changes(client, order_id, table, since, directory, format="parquet", on_file=None, accept_warnings=False):
    """Fetches the change files of a table's versions after `since` into `directory` as
    <table>.v<version>.changes.<format>, as the TypeScript client's `changes` does: each resumable (.part),
    checked by the size its link answers and the sha256 its ETag gives where it is one, recorded with its
    sha256 in directory/.dataset-access-changes.json; one recorded and present with its size is skipped.
    Answers the same report: last_version (the `since` of the next run), files, pruned, failures, and refused:
    the first version whose quality is not "passed" ({version, status, reason, message}; it and later versions
    are not fetched) unless accept_warnings=True, else None."""
    if _order_id_problem(order_id):
        raise DatasetAccessError(404, {"code": "order_not_found", "detail": "%s: %s." % (
            order_id, _order_id_problem(order_id))})
    if not isinstance(table, str) or not _TABLE_NAME.fullmatch(table):
        raise DatasetAccessError(404, {"code": "table_not_found",
                                       "detail": "%s is not a table name (^[a-z][a-z0-9_]{0,62}$)." % json.dumps(table)})
    since = int(since)
    root = _target_directory(directory)
    manifest_path = os.path.join(root, CHANGES_MANIFEST_NAME)
    try:
        with open(manifest_path) as handle:
            manifest = json.load(handle)
        if manifest.get("version") != 1 or not isinstance(manifest.get("files"), dict):
            raise ValueError("not a manifest")
    except (OSError, ValueError):
        manifest = {"version": 1, "files": {}}
    current = client.table(order_id, table)["version"]
    report = {"order": order_id, "table": table, "format": format, "since": since, "current_version": current,
              "last_version": since, "files": [], "pruned": [], "failures": [], "refused": None}
    wanted = []
    if current is not None and current > since:
        for version in client.iter_versions(order_id, table):
            # The number names a file here: a server's answer that is no positive integer is refused.
            number = version.get("version")
            if not isinstance(number, int) or isinstance(number, bool) or number < 1:
                raise UnsafeResponseError("the server listed a version %s: not a number" % json.dumps(number))
            if number <= since:
                break
            wanted.append(version)
    wanted.reverse()
    kept = {version["version"] for version in wanted}
    # A version not passed stops the run before it: the ones before it are fetched, it and later ones are not.
    for index, version in enumerate(wanted if not accept_warnings else []):
        quality = _quality_of(version)
        if quality["status"] != "passed":
            report["refused"] = {"version": version["version"], "status": quality["status"],
                                 "reason": quality.get("reason"),
                                 "message": _not_passed_reason(table, version["version"], quality)}
            del wanted[index:]
            break
    up_to = report["refused"]["version"] - 1 if report["refused"] else (current or 0)
    report["pruned"] = [number for number in range(since + 1, up_to + 1) if number not in kept]

    def fetch_one(version, wait, final):
        name = change_file_name(table, version["version"], format)
        dest = _path_inside(root, name)
        entry = {"version": version["version"], "file": name, "path": dest, "changes": version["changes"],
                 "created_at": version["created_at"]}
        recorded = manifest["files"].get(name)
        if (recorded and (recorded.get("order"), recorded.get("table"), recorded.get("version")) ==
                (order_id, table, version["version"]) and _size(dest) == recorded.get("size")):
            report["files"].append(dict(entry, size=recorded["size"], sha256=recorded["sha256"],
                                        verified_by=recorded.get("verified_by"), action="skipped", bytes_fetched=0,
                                        resumed_from=0))
        else:
            try:
                result = client.download_changes(order_id, table, version["version"], dest, format=format, wait=wait)
            except RenditionPendingError as error:
                if not final:
                    raise
                report["failures"].append({"version": version["version"], "error": str(error)})
                return
            except (VerificationError, NetworkError) as error:
                report["failures"].append({"version": version["version"], "error": str(error)})
                return
            except DatasetAccessError as error:
                if error.code != "version_not_found":
                    raise
                report["failures"].append({"version": version["version"], "error": str(error)})
                return
            manifest["files"][name] = {"order": order_id, "table": table, "version": version["version"],
                                       "format": format, "size": result["size"], "sha256": result["sha256"],
                                       "verified_by": result["verified_by"]}
            _write_manifest(root, manifest, CHANGES_MANIFEST_NAME)
            report["files"].append(dict(entry, size=result["size"], sha256=result["sha256"],
                                        verified_by=result["verified_by"], action="written",
                                        bytes_fetched=result["bytes_fetched"], resumed_from=result["resumed_from"]))
        if on_file:
            on_file(version["version"], name)

    _deferring_pending(wanted, client.rendition_wait, fetch_one)
    report["files"].sort(key=lambda file: file["version"])
    present = {file["version"] for file in report["files"]}
    while report["last_version"] + 1 in present:
        report["last_version"] += 1
    return report


# -- the command ------------------------------------------------------------------------------

EXIT_OK, EXIT_FAILED_FILES, EXIT_USAGE, EXIT_REFUSED, EXIT_NETWORK = 0, 1, 2, 3, 4

_UNPRINTABLE = re.compile(
    "[\x00-\x1f\x7f-\x9f"  # C0, DEL and C1 control characters
    "\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"  # invisible ones that reorder text or break lines
    "\ud800-\udfff]"  # half a surrogate pair
)
_LONGEST_SHOWN = 200
# What a wait is for, as a person reads it.
_WAITING_FOR = {"rate_limited": "rate limited", "unavailable": "unavailable", "network": "network",
                "pacing": "pacing", "rendition": "a rendition is being made"}


def _escape(match):
    code = ord(match.group())
    return "\\x%02x" % code if code < 0x100 else "\\u%04x" % code


def _for_terminal(value):
    """A string from the server made safe to print on a terminal: control characters escaped (`\\x1b`,
    `\\u202e`) so a name cannot move the cursor or recolour the screen, and very long ones cut."""
    text = str(value)
    escaped = _UNPRINTABLE.sub(_escape, text)
    if len(escaped) > _LONGEST_SHOWN:
        return "%s... (%d characters)" % (escaped[:_LONGEST_SHOWN], len(text))
    return escaped


def _text_for_terminal(text):
    """A whole document from the server (the contract's YAML) safe for a terminal: escaped but its line breaks,
    never cut."""
    return _UNPRINTABLE.sub(lambda match: "\n" if match.group() == "\n" else _escape(match), text)


def _count_of(count, singular, plural=None):
    """'1 delivered order', '2 delivered orders': a count with its noun as a person reads it."""
    return "%d %s" % (count, singular if count == 1 else plural or singular + "s")


# What became of a refunded order's copy here, in words a support person reads out.
_REFUNDED_ACTION_TEXT = {
    "kept": "kept (--delete removes it)",
    "never_downloaded": "never downloaded here: nothing to remove",
    "refused": "refused (its id is unsafe)",
}


def _refunded_outcome(refunded):
    if refunded["action"] != "deleted":
        return _REFUNDED_ACTION_TEXT[refunded["action"]]
    left = ", ".join(_for_terminal(name) for name in refunded["left"])
    return "deleted %s%s" % (_count_of(len(refunded["deleted"]), "file"),
                             left and "; left what this tool did not write: " + left)


def _print_sync_report(report):
    """The sync's report for a person: every server-supplied string escaped (see _for_terminal)."""
    f = report["files"]
    without = ", %d without a %s rendition" % (f["no_rendition"], report["format"]) if report["format"] else ""
    print("%s, %s: %d downloaded, %d resumed, %d already there, %d failed, %d refused%s."
          % (_count_of(report["delivered"], "delivered order"), _count_of(f["total"], "file"), f["downloaded"],
             f["resumed"], f["skipped"], f["failed"], f["refused"], without))
    for refunded in report["refunded"]:
        print("Refunded: %s (%s): %s" % (_for_terminal(refunded["id"]), _for_terminal(refunded["name"]),
                                         _refunded_outcome(refunded)))
    for gone in report["superseded"]:
        print("No longer in the order: %s/%s: %s" % (_for_terminal(gone["order"]), _for_terminal(gone["file"]),
              "deleted" if gone["action"] == "deleted" else "kept (--delete removes it)"))
    for failure in report["failures"]:
        print("Failed: %s/%s: %s" % (_for_terminal(failure["order"]), _for_terminal(failure["file"]),
                                     _for_terminal(failure["error"])))
    for refusal in report["refused"]:
        what = _for_terminal(refusal["order"])
        if refusal["file"] is not None:
            what += "/" + _for_terminal(refusal["file"])
        print("Refused: %s: %s" % (what, _for_terminal(refusal["reason"])))
    for skipped in report["no_rendition"]:
        print("No %s rendition: %s/%s: %s" % (report["format"], _for_terminal(skipped["order"]),
                                              _for_terminal(skipped["file"]), _for_terminal(skipped["reason"])))


def _download_files(client, order, files, directory, format):
    """The download command's files of one order into `directory`, in `format`: renditions being made come
    after the rest (see _deferring_pending). Unsafe names are refused, files without a rendition listed,
    renditions still not made after the wait failed; any other error ends the command."""
    root = _target_directory(directory)
    report = {"order": order["id"], "format": format, "files": [], "refused": [], "no_rendition": [], "failures": []}
    items = []
    for planned in _plan_directory(files, format):
        if "refused" in planned:
            report["refused"].append({"file": str(planned["file"].get("name")), "reason": planned["refused"]})
        elif "no_rendition" in planned:
            report["no_rendition"].append({"file": planned["file"]["name"], "reason": planned["no_rendition"]})
        else:
            items.append(planned)

    def fetch_one(item, wait, final):
        file = item["file"]
        try:
            dest = _path_inside(root, item["name"])
            result = client.download(order, file, dest, format=format, rendition_wait=wait)
            report["files"].append(dict(result, file=file["name"], path=dest))
        except UnsafeResponseError as error:
            report["refused"].append({"file": file["name"], "reason": str(error)})
        except NoRenditionError as error:
            report["no_rendition"].append({"file": file["name"], "reason": str(error)})
        except RenditionPendingError as error:
            if not final:
                raise
            report["failures"].append({"file": file["name"], "error": str(error)})

    _deferring_pending(items, client.rendition_wait, fetch_one)
    return report


def _print_download_report(report):
    """The download's report for a person: every server-supplied string escaped (see _for_terminal)."""
    for done in report["files"]:
        print("%s: %s (sha256 verified)" % (_for_terminal(done["file"]), _for_terminal(done["path"])))
    for refused in report["refused"]:
        print("Refused: %s: %s" % (_for_terminal(refused["file"]), _for_terminal(refused["reason"])))
    for skipped in report["no_rendition"]:
        print("No %s rendition: %s: %s" % (report["format"], _for_terminal(skipped["file"]),
                                           _for_terminal(skipped["reason"])))
    for failure in report["failures"]:
        print("Failed: %s: %s" % (_for_terminal(failure["file"]), _for_terminal(failure["error"])))


def _aligned(rows):
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return ["  ".join(cell.ljust(widths[column]) for column, cell in enumerate(row)).rstrip() for row in rows]


def _check_figure(name, value):
    """A check's value as its kind reads: a row count, a PSI, or a fraction as a percentage."""
    if name == "row_count_zero":
        return "{:,}".format(int(value))
    if name == "distribution_shift":
        return "%.3f" % value
    return "%.1f%%" % (value * 100)


def _print_quality_report(table, version, quality, report):
    """A version's quality report for a person, as the TypeScript client prints it; server strings escaped."""
    print("%s version %d: %s" % (_for_terminal(table), version, _for_terminal(quality["status"])))
    if quality.get("reason"):
        print("Reason: %s" % _for_terminal(quality["reason"]))
    previous = report.get("previous_rows")
    if previous is None:
        against = "first version"
    elif previous == 0:
        against = "previous 0"
    else:
        against = "previous {:,}, {:.1f}%".format(previous, (report["rows"] / previous - 1) * 100)
    print("Rows: {:,} ({})".format(report["rows"], against))
    print("Changes: {inserted:,} inserted, {updated:,} updated, {deleted:,} deleted".format(**report["changes"]))
    print("Added columns: %s" % (", ".join(map(_for_terminal, report["added_columns"])) or "none"))
    print("\nChecks:")
    for line in _aligned([("CHECK", "COLUMN", "VALUE", "THRESHOLD", "LEVEL", "OUTCOME")] + [
            (_for_terminal(c["name"]), "-" if c["column"] is None else _for_terminal(c["column"]),
             _check_figure(c["name"], c["value"]), _check_figure(c["name"], c["threshold"]),
             _for_terminal(c["level"]), _for_terminal(c["outcome"])) for c in report["checks"]]):
        print(line)
    print("\nColumns:")
    percent = lambda value: "-" if value is None else "%.1f%%" % (value * 100)  # noqa: E731
    for line in _aligned([("COLUMN", "TYPE", "NULL", "NULL BEFORE", "DISTINCT", "PSI")] + [
            (_for_terminal(c["name"]), _for_terminal(c["type"]), percent(c["null_fraction"]),
             percent(c["previous_null_fraction"]), "{:,}".format(c["distinct"]),
             "-" if c["psi"] is None else "%.3f" % c["psi"]) for c in report["columns"]]):
        print(line)


# -- rows and sql on the command line, as the TypeScript command prints them ---------------------

_CELL_WIDTH = 40  # a cell on a terminal is cut here: the JSON and CSV outputs have every value whole


class _UsageError(Exception):
    """A command line the command cannot run: its one line, then _USAGE_LINE, exit code 2."""


_USAGE_LINE = "Usage: dataset_access.py <command> [options] (dataset_access.py --help lists them)"


class _Parser(argparse.ArgumentParser):
    """argparse, its refusals raised as _UsageError (one line and the usage line), not its own print and exit."""

    def error(self, message):
        raise _UsageError(message[:1].upper() + message[1:] + ("" if message.endswith(".") else "."))


def _whole_option(args, name, low, high=None):
    value = getattr(args, name.replace("-", "_"))
    if value is None:
        return None
    number = int(value) if re.fullmatch(r"\d{1,16}", value) else None
    if number is None or number < low or (high is not None and number > high):
        raise _UsageError("--%s must be a whole number %s." % (
            name, "from %d to %d" % (low, high) if high is not None else "of at least %d" % low))
    return number


def _columns_option(args):
    if args.columns is None:
        return None
    names = [name.strip() for name in args.columns.split(",")]
    if not all(names):
        raise _UsageError("--columns is a comma-separated list of column names.")
    return names


def _value_text(value):
    """A value as JavaScript's String() would write it: null, true/false, nested values as compact JSON."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return str(value)


def _csv_cell(value):
    """RFC 4180: quoted when it holds a quote, comma or line break; null an empty cell."""
    cell = "" if value is None else _value_text(value)
    return '"%s"' % cell.replace('"', '""') if re.search(r'[",\r\n]', cell) else cell


def _print_rows(columns, rows, as_json, as_csv, header, whole=None):
    if as_csv:
        lines = ([[_csv_cell(column["name"]) for column in columns]] if header else []) + [
            [_csv_cell(value) for value in row] for row in rows]
        sys.stdout.write("".join(",".join(cells) + "\r\n" for cells in lines))
    elif as_json:
        print(json.dumps(whole, indent=2, ensure_ascii=False))
    else:
        def cell(value):
            shown = _for_terminal(_value_text(value))
            return shown[:_CELL_WIDTH - 1] + "\u2026" if len(shown) > _CELL_WIDTH else shown
        table = [[cell(column["name"]) for column in columns]] + [[cell(value) for value in row] for row in rows]
        for line in _aligned(table):
            print(line)
        print("%d %s." % (len(rows), "row" if len(rows) == 1 else "rows"), file=sys.stderr)


def _rows_command(client, args, as_json):
    if not args.order or not args.table:
        raise _UsageError("rows needs --order ID --table NAME.")
    options = dict(version=_whole_option(args, "version", 1), columns=_columns_option(args), where=args.where,
                   order_by=args.order_by, limit=_whole_option(args, "limit", 1, 1000))
    offset = _whole_option(args, "offset", 0) or 0
    page = client.rows_page(args.order, args.table, offset=offset, **options)
    if not args.all:
        _print_rows(page["columns"], page["rows"], as_json, args.csv, True, page)
        if not as_json and not args.csv and page["next_offset"] is not None:
            print("More rows follow: --offset %d (or --all)." % page["next_offset"], file=sys.stderr)
        return EXIT_OK
    # Every page from the version of the first, so the pages fit together; CSV goes out page by page.
    first, rows = page, []
    options["version"] = page["version"]
    while True:
        if args.csv:
            _print_rows(page["columns"], page["rows"], as_json, True, page is first)
        else:
            rows.extend(page["rows"])
        if page["next_offset"] is None:
            break
        page = client.rows_page(args.order, args.table, offset=page["next_offset"], **options)
    if not args.csv:
        _print_rows(first["columns"], rows, as_json, False, True, dict(first, rows=rows, next_offset=None))
    return EXIT_OK


def _sql_command(client, args, as_json):
    if not args.order or not args.query:
        raise _UsageError('sql needs --order ID --query "SELECT ...".')
    result = client.sql_result(args.order, args.query, _whole_option(args, "limit", 1, 1000))
    _print_rows(result["columns"], result["rows"], as_json, args.csv, True, result)
    if not as_json and not args.csv and result["truncated"]:
        print("More rows exist: raise --limit (up to 1000) or narrow the query.", file=sys.stderr)
    return EXIT_OK


def _contract_command(client, args):
    """The table's data contract: the YAML as served (also off a terminal: `> contract.yaml` gets the server's
    file), or with --json the JSON document; on a terminal its control characters are escaped."""
    if not args.order or not args.table:
        raise _UsageError("contract needs --order ID --table NAME.")
    if args.json:
        print(json.dumps(client.contract(args.order, args.table, format="json"), indent=2, ensure_ascii=False))
    else:
        text = client.contract(args.order, args.table)
        sys.stdout.write(_text_for_terminal(text) if sys.stdout.isatty() else text)
    return EXIT_OK


# The API's query parameters a detail starts with ("q: the query is empty."), as this command's flags.
_FLAG_OF_PARAMETER = {"q": "--query", "where": "--where", "columns": "--columns", "order_by": "--order-by"}


def _naming_flags(detail):
    """A detail of the API naming the flag the buyer typed rather than the query parameter it became."""
    return re.sub(r"^(\w+): ", lambda m: _FLAG_OF_PARAMETER.get(m.group(1), m.group(1)) + ": ", detail)


def _client_settings():
    """The server and the key come from the environment: the command has no flag for either."""
    if not os.environ.get("DATASET_ACCESS_URL"):
        raise _UsageError("No server URL: set DATASET_ACCESS_URL to the site's address, e.g. https://data.example.com.")
    if not os.environ.get("DATASET_ACCESS_KEY"):
        raise _UsageError("No API key: set DATASET_ACCESS_KEY to an API key with datasets:read.")


def _seconds(value):
    if not value.isdigit():
        raise argparse.ArgumentTypeError("a whole number of seconds")
    return int(value)


def main(argv=None):
    try:
        return _main(argv)
    except _UsageError as error:
        print("%s\n%s" % (_for_terminal(error), _USAGE_LINE), file=sys.stderr)
        return EXIT_USAGE


def _main(argv):
    parser = _Parser(
        prog="dataset_access.py",
        description="Dataset Access client. Environment: DATASET_ACCESS_KEY, DATASET_ACCESS_URL.",
        epilog="Exit codes: 0 done; 1 some files failed, or were refused as unsafe, or the one FILE named has no "
        "rendition in --format; 2 usage; 3 refused by the API; 4 network.",
    )
    parser.add_argument("-V", "--version", action="version", version="dataset_access.py " + __version__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("orders", help="list your paid orders").add_argument("--json", action="store_true")
    download = commands.add_parser("download", help="download one file or every file of an order")
    download.add_argument("order")
    download.add_argument("file", nargs="?")
    download.add_argument("--dir", default=".")
    download.add_argument("--json", action="store_true")
    mirror = commands.add_parser("sync", help="mirror every delivered order's files into --dir")
    mirror.add_argument("--dir", required=True)
    mirror.add_argument("--delete", action="store_true", help="remove what it wrote for refunded orders, and the "
                        "files that left a delivered order's list (a new snapshot version's old parts)")
    mirror.add_argument("--json", action="store_true")
    listing = commands.add_parser("tables", help="list an order's tables: name, mode, key, version, rows, updated")
    listing.add_argument("--order", required=True)
    listing.add_argument("--json", action="store_true")
    feed = commands.add_parser("changes", help="fetch the change files of the versions after --since into --dir; "
                               "prints the last version written (the --since of the next run)")
    feed.add_argument("--order", required=True)
    feed.add_argument("--table", required=True)
    feed.add_argument("--since", required=True, type=int)
    feed.add_argument("--dir", required=True)
    feed.add_argument("--accept-warnings", action="store_true", help="apply versions whose quality is warned or "
                      "released too (by default the run stops before the first)")
    feed.add_argument("--json", action="store_true")
    judged = commands.add_parser("quality", help="a version's quality report (default: the current version)")
    judged.add_argument("--order", required=True)
    judged.add_argument("--table", required=True)
    judged.add_argument("--version", type=int)
    judged.add_argument("--json", action="store_true")
    promised = commands.add_parser("contract", help="the table's data contract (ODCS v3.1.0: columns, key, "
                                   "descriptions, quality checks, cadence) as YAML, or as JSON with --json")
    for name in ("--order", "--table"):
        promised.add_argument(name)
    promised.add_argument("--json", action="store_true")
    reading = commands.add_parser("rows", help="a table's rows, filtered on the server (--all: every page from "
                                  "--offset on, --limit rows a page)")
    for name in ("--order", "--table", "--version", "--columns", "--where", "--order-by", "--limit", "--offset"):
        reading.add_argument(name)
    reading.add_argument("--all", action="store_true")
    querying = commands.add_parser("sql", help='one read-only SELECT over the order\'s tables ("name", "name@N", '
                                   '"name@changes"); at most --limit rows (1-1000)')
    for name in ("--order", "--query", "--limit"):
        querying.add_argument(name)
    for command in (reading, querying):
        command.add_argument("--csv", action="store_true", help="the rows as CSV (a header line, then one a row)")
        command.add_argument("--json", action="store_true")
    for command in (download, mirror, feed):
        command.add_argument("--format", choices=RENDITION_FORMATS,
                             help="each data file as this rendition (products.csv -> products.parquet), verified by "
                             "its sha256; a file already in it comes as it is; binary or unreadable files have none "
                             "and are listed under no_rendition")
        command.add_argument("--rendition-wait", type=_seconds, default=DEFAULT_RENDITION_WAIT, metavar="SECONDS",
                             help="how long to wait for a rendition the server is still making, per file (default "
                             "%(default)d); then that file has failed")
    args = parser.parse_args(argv)
    as_json = args.json or not sys.stdout.isatty()
    _client_settings()
    try:
        client = Client(rendition_wait=getattr(args, "rendition_wait", DEFAULT_RENDITION_WAIT),
                        on_wait=None if as_json else lambda reason, s: s >= 1 and print(
                            "(waiting %d s: %s)" % (s, _WAITING_FOR[reason]), file=sys.stderr))
        if args.command == "contract":
            return _contract_command(client, args)
        if args.command == "rows":
            return _rows_command(client, args, as_json)
        if args.command == "sql":
            return _sql_command(client, args, as_json)
        if args.command == "orders":
            orders = list(client.iter_orders())
            if as_json:
                print(json.dumps(orders, indent=2))
            else:
                for order in orders:
                    print("%s  %-10s  %4d files  %s" % (_for_terminal(order["id"]), _for_terminal(order["status"]),
                                                        len(order["files"]), _for_terminal(order["name"])))
            return EXIT_OK
        if args.command == "tables":
            tables = client.tables(args.order)
            if as_json:
                print(json.dumps(tables, indent=2))
            else:
                rows = [("TABLE", "MODE", "KEY", "VERSION", "ROWS", "UPDATED")] + [
                    (_for_terminal(t["name"]), _for_terminal(t["mode"]),
                     _for_terminal(",".join(t["key"])) if t.get("key") else "-",
                     "-" if t.get("version") is None else str(t["version"]),
                     "-" if t.get("rows") is None else str(t["rows"]),
                     _for_terminal(t["updated_at"]) if t.get("updated_at") else "-") for t in tables]
                widths = [max(len(row[column]) for row in rows) for column in range(6)]
                for row in rows:
                    print("  ".join(cell.ljust(widths[column]) for column, cell in enumerate(row)).rstrip())
            return EXIT_OK
        if args.command == "changes":
            if args.since < 0:
                raise _UsageError("--since must be a version number (0: from the first).")
            report = changes(client, args.order, args.table, args.since, args.dir, format=args.format or "parquet",
                             accept_warnings=args.accept_warnings,
                             on_file=None if as_json else lambda version, name: print(
                                 "version %d: %s" % (version, _for_terminal(name)), file=sys.stderr))
            if as_json:
                print(json.dumps(report, indent=2))
            else:
                written = sum(1 for entry in report["files"] if entry["action"] == "written")
                print("%s: current version %s; %s written, %d already there."
                      % (_for_terminal(report["table"]),
                         "none" if report["current_version"] is None else report["current_version"],
                         _count_of(written, "change file"), len(report["files"]) - written), file=sys.stderr)
                if report["pruned"]:
                    print("Pruned: versions %s are no longer kept: read the table's current version whole instead."
                          % ", ".join(map(str, report["pruned"])), file=sys.stderr)
                for failure in report["failures"]:
                    print("Failed: version %d: %s" % (failure["version"], _for_terminal(failure["error"])),
                          file=sys.stderr)
                if report["refused"]:
                    print(_for_terminal(report["refused"]["message"]), file=sys.stderr)
                print("Last version written: %d" % report["last_version"])
            return EXIT_FAILED_FILES if report["failures"] or report["pruned"] or report["refused"] else EXIT_OK
        if args.command == "quality":
            if args.version is not None and args.version < 1:
                raise _UsageError("--version must be a version number (1 or more).")
            number = args.version or client.table(args.order, args.table)["version"]
            report = client.quality(args.order, args.table, number)
            if as_json:
                print(json.dumps(report, indent=2))
            else:
                _print_quality_report(args.table, number, _quality_of(client.version(args.order, args.table, number)),
                                      report)
            return EXIT_OK
        if args.command == "download":
            order = client.get_order(args.order)
            files = [f for f in order["files"] if not args.file or args.file in (f["id"], f["name"])]
            if not files:
                print("Order %s has no file %s." % (_for_terminal(order["id"]), args.file), file=sys.stderr)
                return EXIT_USAGE
            report = _download_files(client, order, files, args.dir, args.format)
            if as_json:
                print(json.dumps(report, indent=2))
            else:
                _print_download_report(report)
            # Every file of an order in a format: one that has none is no failure. The one file named is.
            missing = bool(args.file) and bool(report["no_rendition"])
            return EXIT_FAILED_FILES if report["refused"] or report["failures"] or missing else EXIT_OK
        progress = None
        if not as_json and sys.stderr.isatty():
            def progress(done, total):
                filled = int(30 * done / total) if total else 30
                sys.stderr.write("\r[%s%s] %d/%d files" % ("#" * filled, "-" * (30 - filled), done, total))
                if done == total:
                    sys.stderr.write("\n")
        report = sync(client, args.dir, delete=args.delete, on_file=progress, format=args.format)
        if as_json:
            print(json.dumps(report, indent=2))
        else:
            _print_sync_report(report)
        return EXIT_FAILED_FILES if report["files"]["failed"] or report["refused"] else EXIT_OK
    except ValueError as error:
        print(error, file=sys.stderr)
        return EXIT_USAGE
    except DatasetAccessError as error:
        print("The API refused: %s: %s%s" % (_for_terminal(error.code), _for_terminal(_naming_flags(error.detail)),
              " (request %s)" % _for_terminal(error.request_id) if error.request_id else ""), file=sys.stderr)
        return EXIT_REFUSED
    except NetworkError as error:
        print("Network: %s" % _for_terminal(error), file=sys.stderr)
        return EXIT_NETWORK
    except VerificationError as error:
        print(_for_terminal(error), file=sys.stderr)
        return EXIT_FAILED_FILES
    except UnsafeResponseError as error:
        print("Refused: %s" % _for_terminal(error), file=sys.stderr)
        return EXIT_FAILED_FILES


if __name__ == "__main__":
    sys.exit(main())
