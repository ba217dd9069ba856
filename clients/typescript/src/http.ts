import { DatasetAccessError, NetworkError } from "./errors.js";
import { parseRateLimit, RatePacer, type Clock } from "./pacing.js";

/** Why the client waits: a 429, a 5xx, a network error, its own pacing, or a rendition being made (a 202). */
export type WaitReason = "rate_limited" | "unavailable" | "network" | "pacing" | "rendition";

export type RetryOptions = {
  /** Retries of one request (429, 503, other 5xx, network errors); 4xx other than 429 never. */
  maxRetries?: number;
  /** Longest wait between attempts, in ms. */
  maxDelayMs?: number;
  /** Called before each wait (for logs and tests). */
  onWait?: (wait: { reason: WaitReason; ms: number }) => void;
  /** The clock's sleep, replaceable in tests. */
  sleep?: (ms: number) => Promise<void>;
  /** The clock the pacing reads, replaceable in tests (with `sleep`). */
  clock?: Clock;
};

export const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Wraps fetch: retries 429 and 503 after their Retry-After, other 5xx and network errors with
 * jittered exponential backoff, never other 4xx; and paces itself from the RateLimit headers
 * (./pacing.ts), so a long run does not meet a 429 it could foresee.
 */
export class Transport {
  private readonly maxRetries: number;
  private readonly maxDelayMs: number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly onWait: RetryOptions["onWait"];
  private readonly pacer: RatePacer;
  /** 429s received (a paced client should see none unless another client shares the account). */
  rateLimited = 0;

  constructor(
    private readonly baseFetch: typeof fetch,
    options: RetryOptions = {},
  ) {
    this.maxRetries = options.maxRetries ?? 8;
    this.maxDelayMs = options.maxDelayMs ?? 60_000;
    this.sleep = options.sleep ?? defaultSleep;
    this.onWait = options.onWait;
    this.pacer = new RatePacer(options.clock);
  }

  /**
   * One request with retries and pacing; answers the final response (errors included, for the
   * caller to judge). Callers may send several at once: the pacer lets each through only when the
   * account has room for it.
   */
  async fetch(input: Request | string, init?: RequestInit): Promise<Response> {
    for (let attempt = 0; ; attempt++) {
      const ticket = await this.pacer.acquire((ms) => this.wait("pacing", ms));
      const request = input instanceof Request ? input.clone() : new Request(input, init);
      let response: Response;
      try {
        response = await this.baseFetch(request);
      } catch (error) {
        this.pacer.release(ticket, undefined);
        if (attempt >= this.maxRetries) {
          throw new NetworkError(`${request.method} ${request.url} failed: ${(error as Error).message}`, {
            cause: error,
          });
        }
        await this.wait("network", this.backoff(attempt));
        continue;
      }
      const retryAfter = retryAfterMs(response.headers.get("retry-after"));
      const limited = response.status === 429;
      this.pacer.release(
        ticket,
        parseRateLimit(response.headers),
        limited ? (retryAfter ?? this.backoff(attempt)) : undefined,
      );
      const retryable = limited || response.status >= 500;
      if (!retryable || attempt >= this.maxRetries) return response;
      if (limited) this.rateLimited++;
      await response.body?.cancel();
      if (limited || response.status === 503) {
        await this.wait(limited ? "rate_limited" : "unavailable", retryAfter ?? this.backoff(attempt));
      } else {
        await this.wait("unavailable", this.backoff(attempt));
      }
    }
  }

  /** Full jitter: a random wait up to 0.5 s x 2^attempt, capped. */
  private backoff(attempt: number): number {
    return Math.round(Math.random() * Math.min(this.maxDelayMs, 500 * 2 ** attempt));
  }

  private async wait(reason: WaitReason, ms: number): Promise<void> {
    const bounded = Math.min(ms, this.maxDelayMs);
    this.onWait?.({ reason, ms: bounded });
    await this.sleep(bounded);
  }
}

export function retryAfterMs(value: string | null): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/** Turns an error answer into the typed exception, reading its problem+json body. */
export async function problemError(response: Response): Promise<DatasetAccessError> {
  let problem: { code?: string; detail?: string; request_id?: string } = {};
  try {
    problem = (await response.json()) as typeof problem;
  } catch {
    // Not a problem document (e.g. a proxy's page): the status says enough.
  }
  return new DatasetAccessError(response.status, {
    ...problem,
    request_id: problem.request_id ?? response.headers.get("x-request-id") ?? undefined,
  });
}
