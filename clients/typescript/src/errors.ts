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

/**
 * Something in the server's answer the client will not act on: an id or file name that could
 * reach outside the target directory, or a symbolic link in the way. The file (or order) is
 * skipped and reported; nothing is written or deleted for it.
 */
export class UnsafeResponseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UnsafeResponseError";
  }
}

/**
 * The file cannot be had in the format asked: it is binary, its data could not be read, or its
 * rendition could not be made (the API's 404 preview_not_available). The original still can.
 */
export class NoRenditionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "NoRenditionError";
  }
}

/** The server is still making the rendition asked for (its 202 rendition_pending): ask again after `retryAfterMs`. */
export class RenditionPendingError extends Error {
  constructor(
    message: string,
    readonly retryAfterMs: number,
  ) {
    super(message);
    this.name = "RenditionPendingError";
  }
}
