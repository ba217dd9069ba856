/** An answer of the API that is an error: the problem's `code`, `detail` and `request_id`. */
export class DatasetAccessError extends Error {
  readonly status: number;
  readonly code: string;
  readonly detail: string;
  readonly requestId: string | undefined;

  constructor(status: number, problem: { code?: string; detail?: string; request_id?: string }) {
    super(`${problem.code ?? `http_${status}`}: ${problem.detail ?? `the API answered ${status}`}`);
    this.name = "DatasetAccessError";
    this.status = status;
    this.code = problem.code ?? `http_${status}`;
    this.detail = problem.detail ?? `The API answered ${status}.`;
    this.requestId = problem.request_id;
  }
}

/** The server could not be reached (or the connection broke) after every retry. */
export class NetworkError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "NetworkError";
  }
}

/** A downloaded file's size or sha256 is not the one the API gave: nothing was kept. */
export class VerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "VerificationError";
  }
}
