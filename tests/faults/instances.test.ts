import { createHash, randomBytes } from "node:crypto";
import http from "node:http";
import IORedis from "ioredis";
import { afterAll, beforeAll, expect, it } from "vitest";
import { sqlQuery } from "../../lib/db/client";
import { createTestEnvironment } from "../helpers/database";
import { apiKey, buyer, order, type TestEnvironment } from "../helpers/fixtures";
import { startTestS3, type TestS3 } from "../helpers/s3";
import { startServer, type TestServer } from "../helpers/server";
import { processTree, signalAll, waitForExit } from "./helpers/processes";
import { startRedisServer, type TestRedisServer } from "./helpers/redis-server";
import { errorCode, reportFault, tally } from "./helpers/report";

/**
 * Fault: one of two app instances (one database, one Redis for the shared rate limit, one S3
 * store) is killed with SIGKILL in the middle of traffic. A client that retries what failed
 * (connection refused or reset, a 5xx) through the other instance loses nothing: every API request
 * gets its correct answer, and every file of a download, whose API step ran on the dying
 * instance, arrives with the right sha256 (with S3 the bytes come from the store, on a presigned
 * URL that outlives the instance that signed it).
 */

/** A request or a download waits at most this long for its answer, however loaded the machine. */
const ANSWER_WITHIN_MS = 30_000;
/** The client's attempts per request: the first, then retries alternating between the instances. */
const MAX_ATTEMPTS = 4;
const ACCOUNTS = 10;
const REQUESTS = 200;
/** The kill comes once the doomed instance has answered this many of the burst: the rest are in flight or queued. */
const KILL_AFTER_ANSWERS = 10;
const MiB = 1024 * 1024;
/** A small first file, so the next file's API step (on the dying instance) starts while the big ones stream. */
const FILE_SIZES = [1, 6, 6, 3, 3, 3].map((mebibytes) => mebibytes * MiB + 7);
const DOWNLOADS_AT_ONCE = 3;
/** The kill hits this API step of the download (0-based): the first one after the small file is done. */
const KILL_AT_API_STEP = DOWNLOADS_AT_ONCE;

let redis: TestRedisServer;
let s3: TestS3;
let env: TestEnvironment;
const running: TestServer[] = [];
let admin: IORedis | undefined;

beforeAll(async () => {
  redis = await startRedisServer();
  s3 = await startTestS3();
  // This process uploads the fixtures' files to the same store as the instances.
  Object.assign(process.env, s3.env);
  env = await createTestEnvironment("fault_instances");
}, 180_000);

afterAll(async () => {
  admin?.disconnect();
  await Promise.all(running.map((instance) => instance.stop()));
  await env?.cleanup();
  await s3?.stop();
  await redis?.stop();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

/** Two instances as deployed: shared database, Redis and bucket, the same AUTH_SECRET. */
async function startPair(): Promise<[TestServer, TestServer]> {
  const pair = await Promise.all(
    [1, 2].map(() =>
      startServer({
        databaseUrl: env.database.url,
        storageDir: env.storageDir,
        env: { ...s3.env, REDIS_URL: redis.url, JOBS_WORKER: "off" },
      }),
    ),
  );
  running.push(...pair);
  return pair as [TestServer, TestServer];
}

/** Rate-limit counts of an account in Redis, all windows together: every request that passed the limiter. */
async function rateLimitCharges(buyerId: string): Promise<number> {
  admin ??= new IORedis(redis.url, { maxRetriesPerRequest: 1 });
  const keys = await admin.keys(`ratelimit:datasets:${buyerId}:*`);
  const values = keys.length > 0 ? await admin.mget(...keys) : [];
  return values.reduce((sum, value) => sum + Number(value ?? 0), 0);
}

/** The usage counts written for these keys, all outcomes. */
async function recordedUsage(keyIds: string[]): Promise<number> {
  const [row] = await sqlQuery<{ count: number }>(
    "SELECT coalesce(sum(count), 0)::int AS count FROM api_key_usage WHERE key_id = ANY($1::text[])",
    [keyIds],
  );
  return row!.count;
}

type Attempt = { instance: number; status?: number; error?: string };
type Answer = { status: number; body: unknown };

/** What the client compares: the status and the body, with a problem's request id left out (it differs per request). */
function answerOf(status: number, text: string): Answer {
  const body = JSON.parse(text) as Record<string, unknown>;
  delete body.request_id;
  return { status, body };
}

it("kill -9 of one instance during 200 concurrent API requests: retried through the other, nothing is lost", async () => {
  const instances = await startPair();
  const [doomed, survivor] = [0, 1];
  const accounts = await Promise.all(
    Array.from({ length: ACCOUNTS }, async (_, index) => {
      const created = await buyer(`instances-${index}`);
      const first = await order(created.id, { name: `first ${index}` });
      await order(created.id, { name: `second ${index}`, status: "refunded" });
      const key = await apiKey(created.id);
      return { id: created.id, keyId: key.id, key: key.secret, orderId: first.id };
    }),
  );
  // Per account: its list, one order, and an order that does not exist (a 404 is a correct answer too).
  const paths = (account: (typeof accounts)[number]) => [
    "/api/v1/orders",
    `/api/v1/orders/${account.orderId}`,
    "/api/v1/orders/ord_00000000000000000000000000000000",
  ];
  const get = (instance: number, path: string, key: string) =>
    fetch(`${instances[instance]!.url}${path}`, {
      headers: { Authorization: `Bearer ${key}` },
      signal: AbortSignal.timeout(ANSWER_WITHIN_MS),
    });
  // The correct answers, from the survivor before the fault.
  const expected = new Map<string, Answer>();
  for (const account of accounts) {
    for (const path of paths(account)) {
      const response = await get(survivor, path, account.key);
      expected.set(`${account.key} ${path}`, answerOf(response.status, await response.text()));
    }
  }

  // Listed now, so that the kill is a plain system call at the chosen answer.
  const doomedPids = await processTree(instances[doomed]!.pid!);
  let answeredByDoomed = 0;
  let killedAt = 0;
  const attempts: Attempt[][] = [];
  const finishedAt: number[] = [];

  /** The request of that number: which account asks for what. */
  const target = (index: number) => {
    const account = accounts[index % ACCOUNTS]!;
    return { account, path: paths(account)[Math.floor(index / ACCOUNTS) % 3]! };
  };

  /** One request, through its instance first, then through the other one, and so on, until a non-5xx answer. */
  async function request(index: number): Promise<Answer | undefined> {
    const { account, path } = target(index);
    const tried: Attempt[] = (attempts[index] = []);
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const instance = (index + attempt) % 2;
      if (attempt > 0) await sleep(50 * attempt);
      try {
        const response = await get(instance, path, account.key);
        const text = await response.text();
        tried.push({ instance, status: response.status });
        if (response.status >= 500) continue;
        if (instance === doomed && ++answeredByDoomed === KILL_AFTER_ANSWERS) {
          signalAll(doomedPids, "SIGKILL");
          killedAt = Date.now();
        }
        finishedAt[index] = Date.now();
        return answerOf(response.status, text);
      } catch (error) {
        tried.push({ instance, error: errorCode(error) });
      }
    }
    return undefined;
  }

  const startedAt = Date.now();
  const answers = await Promise.all(Array.from({ length: REQUESTS }, (_, index) => request(index)));
  const exited = await waitForExit(doomedPids);
  // SIGTERM: the survivor writes its usage counts; the killed instance's, still in its process, are gone.
  await instances[survivor]!.stop();

  const all = attempts.flat();
  const wrong = answers.filter((answer, index) => {
    const { account, path } = target(index);
    return answer !== undefined && JSON.stringify(answer) !== JSON.stringify(expected.get(`${account.key} ${path}`));
  });
  const answered = answers.filter((answer) => answer !== undefined).length;
  const fromDoomed = attempts.filter((tried) => tried.at(-1)?.instance === doomed && tried.at(-1)?.status).length;
  const charges = (await Promise.all(accounts.map((account) => rateLimitCharges(account.id)))).reduce((a, b) => a + b);
  const answersIncludingBaseline = answered + expected.size;
  const usage = await recordedUsage(accounts.map((account) => account.keyId));
  await reportFault("instance-kill-api", {
    requests: REQUESTS,
    attempts: all.length,
    retries: all.length - REQUESTS,
    final_statuses: tally(answers.map((answer) => answer?.status ?? "lost")),
    attempt_statuses: tally(all.map((attempt) => attempt.status ?? attempt.error!)),
    status_5xx: all.filter((attempt) => (attempt.status ?? 0) >= 500).length,
    status_5xx_survivor: all.filter((attempt) => attempt.instance === survivor && (attempt.status ?? 0) >= 500).length,
    connection_errors: all.filter((attempt) => attempt.error).length,
    lost: REQUESTS - answered,
    wrong_answers: wrong.length,
    answered_by_killed: fromDoomed,
    answered_by_survivor: answered - fromDoomed,
    // Requests the killed instance had counted against the rate limit but never answered, counted again on the retry.
    duplicated: charges - answersIncludingBaseline,
    killed_processes: doomedPids.length,
    // From the kill to the last request's correct answer.
    recovery_ms: Math.max(...finishedAt.filter(Boolean)) - killedAt,
    duration_ms: Math.max(...finishedAt.filter(Boolean)) - startedAt,
    // Usage counts: a crash loses what the killed instance had not written yet (at most 5 s of its answers).
    usage_answers: answersIncludingBaseline,
    usage_recorded: usage,
    usage_unrecorded: answersIncludingBaseline - usage,
  });

  expect(killedAt).toBeGreaterThan(0);
  expect(exited).toBe(true);
  expect(all.filter((attempt) => attempt.error).length).toBeGreaterThan(0);
  expect(answers.filter((answer) => answer === undefined)).toEqual([]);
  expect(wrong).toEqual([]);
  expect(all.filter((attempt) => attempt.instance === survivor && (attempt.status ?? 0) >= 500)).toEqual([]);
  expect(all.filter((attempt) => attempt.status === 429)).toEqual([]);
  expect(charges).toBeGreaterThanOrEqual(answersIncludingBaseline);
  expect(answersIncludingBaseline - usage).toBeLessThanOrEqual(fromDoomed);
});

/** The API step of a download: the redirect's status and Location. `onSent` runs once the request is on the wire. */
function downloadRedirect(
  url: string,
  key: string,
  onSent: () => void,
): Promise<{ status: number; location?: string }> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, {
      headers: { Authorization: `Bearer ${key}` },
      signal: AbortSignal.timeout(ANSWER_WITHIN_MS),
    });
    request.once("finish", onSent);
    request.once("error", reject);
    request.once("response", (response) => {
      response.resume();
      response.once("end", () => resolve({ status: response.statusCode!, location: response.headers.location }));
      response.once("error", reject);
    });
  });
}

it("kill -9 of an instance during a download of several files: each one arrives whole, with its sha256", async () => {
  const contents = FILE_SIZES.map((size) => randomBytes(size));
  const account = await buyer("instances-download");
  const delivered = await order(account.id, {
    files: Object.fromEntries(contents.map((bytes, index) => [`part-${index}.bin`, bytes])),
  });
  const key = (await apiKey(account.id)).secret;
  const files = delivered.files.map((file) => ({ ...file, sha: sha256(contents[Number(/\d+/.exec(file.name)![0])]!) }));
  const instances = await startPair();
  // Listed now, so stopping and killing are plain system calls around the moment the API step is on the wire.
  const doomedPids = await processTree(instances[0].pid!);

  let preferred = 0;
  let apiSteps = 0;
  let killedAt = 0;
  const apiAttempts: Attempt[] = [];
  const transferring = new Set<string>();
  let inFlightAtKill: string[] = [];
  const byteFailures: string[] = [];
  const finished = new Map<string, { sha: string; size: number; attempts: number; at: number }>();

  /** The download flow of one file: the API step on the preferred instance (the other one after a failure), then the presigned URL. */
  async function download(file: (typeof files)[number]): Promise<void> {
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const instance = preferred;
      const step = apiSteps++;
      let redirect: { status: number; location?: string };
      // Frozen before this step is sent, so it cannot answer in the moment between the request
      // leaving and the kill (a busy test process once let a fast instance answer 302 first).
      if (step === KILL_AT_API_STEP) signalAll(doomedPids, "SIGSTOP");
      try {
        redirect = await downloadRedirect(
          `${instances[instance]!.url}/api/v1/orders/${delivered.id}/files/${file.id}`,
          key,
          () => {
            if (step !== KILL_AT_API_STEP) return;
            signalAll(doomedPids, "SIGKILL");
            killedAt = Date.now();
            inFlightAtKill = [...transferring];
          },
        );
      } catch (error) {
        apiAttempts[step] = { instance, error: errorCode(error) };
        preferred = 1 - instance;
        continue;
      }
      apiAttempts[step] = { instance, status: redirect.status };
      if (redirect.status !== 302) {
        preferred = 1 - instance;
        continue;
      }
      try {
        transferring.add(file.id);
        const response = await fetch(redirect.location!, { signal: AbortSignal.timeout(ANSWER_WITHIN_MS) });
        const bytes = Buffer.from(await response.arrayBuffer());
        finished.set(file.id, { sha: sha256(bytes), size: bytes.length, attempts: attempt, at: Date.now() });
        if (response.status === 200 && sha256(bytes) === file.sha) return;
        byteFailures.push(`${file.name}: ${response.status}, sha256 ${sha256(bytes)}`);
      } catch (error) {
        byteFailures.push(`${file.name}: ${errorCode(error)}`);
      } finally {
        transferring.delete(file.id);
      }
    }
  }

  const startedAt = Date.now();
  const queue = [...files];
  await Promise.all(
    Array.from({ length: DOWNLOADS_AT_ONCE }, async () => {
      for (let file = queue.shift(); file; file = queue.shift()) await download(file);
    }),
  );
  const exited = await waitForExit(doomedPids);
  const complete = files.filter((file) => finished.get(file.id)?.sha === file.sha);
  const lastAt = Math.max(...[...finished.values()].map((entry) => entry.at));
  await reportFault("instance-kill-download", {
    files: files.length,
    bytes: FILE_SIZES.reduce((a, b) => a + b),
    complete: complete.length,
    lost: files.length - complete.length,
    sha256_mismatches: files.filter((file) => finished.has(file.id) && finished.get(file.id)!.sha !== file.sha).length,
    api_steps: apiAttempts.length,
    api_statuses: tally(apiAttempts.map((attempt) => attempt.status ?? attempt.error!)),
    api_status_5xx: apiAttempts.filter((attempt) => (attempt.status ?? 0) >= 500).length,
    connection_errors: apiAttempts.filter((attempt) => attempt.error).length,
    retries: [...finished.values()].reduce((sum, entry) => sum + entry.attempts - 1, 0),
    byte_transfer_failures: byteFailures,
    // Transfers on URLs the killed instance had signed, under way at the kill: they go on (the store serves them).
    transfers_in_flight_at_kill: inFlightAtKill.length,
    in_flight_completed_without_retry: inFlightAtKill.filter((id) => finished.get(id)?.attempts === 1).length,
    recovery_ms: killedAt ? lastAt - killedAt : null,
    duration_ms: lastAt - startedAt,
  });

  expect(killedAt).toBeGreaterThan(0);
  expect(exited).toBe(true);
  // The API step on the dying instance failed and was retried through the other one.
  expect(apiAttempts[KILL_AT_API_STEP]).toMatchObject({ instance: 0, error: expect.any(String) });
  expect(complete.map((file) => file.name)).toEqual(files.map((file) => file.name));
  expect(byteFailures).toEqual([]);
  expect(apiAttempts.filter((attempt) => (attempt.status ?? 0) >= 500)).toEqual([]);
});
