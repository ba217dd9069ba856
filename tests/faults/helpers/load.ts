import { errorCode } from "./report";

/** One request of a load: when it left and came back, and what came back (an answer or an error). */
export type LoadRequest = {
  /** Its number, 0, 1, 2, ... in the order sent: `send` picks the target from it. */
  index: number;
  sentAt: number;
  answeredAt: number;
  status?: number;
  /** The problem+json `code` of an error answer. */
  code?: string;
  retryAfter?: string;
  /** No answer: the socket error (ECONNRESET, ...) or TimeoutError past `timeoutMs`. */
  error?: string;
};

export type Load = {
  requests: LoadRequest[];
  /** Stops sending and resolves once every request in flight has ended. */
  stop: () => Promise<LoadRequest[]>;
};

/**
 * A steady load to hold a fault under: `workers` clients, each with one request at a time and
 * `paceMs` between its requests, until stopped, `maxDurationMs` has passed or `maxRequests` were
 * sent. Each request is abandoned after `timeoutMs`, so the load never hangs a test; its body is read.
 * Times are Date.now() values, to compare with the instants a test notes around its fault.
 */
export function startLoad(options: {
  workers: number;
  paceMs: number;
  maxDurationMs: number;
  maxRequests: number;
  timeoutMs: number;
  send: (index: number, signal: AbortSignal) => Promise<Response>;
}): Load {
  const requests: LoadRequest[] = [];
  const endsAt = Date.now() + options.maxDurationMs;
  let stopped = false;
  const more = () => !stopped && Date.now() < endsAt && requests.length < options.maxRequests;

  async function worker(): Promise<void> {
    while (more()) {
      const request: LoadRequest = { index: requests.length, sentAt: Date.now(), answeredAt: 0 };
      requests.push(request);
      Object.assign(request, await outcome(options.send(request.index, AbortSignal.timeout(options.timeoutMs))));
      request.answeredAt = Date.now();
      await new Promise((resolve) => setTimeout(resolve, options.paceMs));
    }
  }
  const workers = Promise.all(Array.from({ length: options.workers }, worker));
  return {
    requests,
    stop: async () => {
      stopped = true;
      await workers;
      return requests;
    },
  };
}

async function outcome(pending: Promise<Response>): Promise<Partial<LoadRequest>> {
  try {
    const response = await pending;
    const body = await response.text();
    const problem = response.headers.get("content-type") === "application/problem+json";
    return {
      status: response.status,
      code: problem ? (JSON.parse(body) as { code?: string }).code : undefined,
      retryAfter: response.headers.get("retry-after") ?? undefined,
    };
  } catch (error) {
    return { error: errorCode(error) };
  }
}
