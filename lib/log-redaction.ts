import { Transform, type TransformCallback } from "node:stream";

/**
 * Secrets in free text a process prints: an `api_key=` query parameter's value (a buyer who put
 * the key in the URL), and an API key secret (`dak_...`, lib/keys/secret.ts) wherever it stands.
 * Next.js's development server prints each request's URL as it came, query and all
 * (scripts/serve.ts passes its output through redactingLines).
 */
const SECRET_IN_TEXT = /(\bapi_key=)[^&#\s"'<>]*|\bdak_[0-9A-Za-z]+/gi;

export function redactSecrets(text: string): string {
  return text.replace(SECRET_IN_TEXT, (_, parameter: string | undefined) =>
    parameter ? `${parameter}[redacted]` : "dak_[redacted]",
  );
}

/** A stream that passes text through line by line, each line redacted (a secret split across chunks is redacted whole). */
export function redactingLines(): Transform {
  let pending = "";
  return new Transform({
    transform(chunk: Buffer, _encoding, done: TransformCallback) {
      const text = pending + chunk.toString("utf8");
      const end = text.lastIndexOf("\n") + 1;
      pending = text.slice(end);
      done(null, end ? redactSecrets(text.slice(0, end)) : undefined);
    },
    flush(done: TransformCallback) {
      done(null, pending ? redactSecrets(pending) : undefined);
    },
  });
}
