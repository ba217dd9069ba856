const textBodies = new WeakMap<Response, string>();

/**
 * A short answer whose text is kept beside it: served on Node's response (lib/http/node.ts), the
 * text is written as is, and the web body, which stays for web callers (tests), is never read
 * back: reading it was a twentieth of the CPU per API request (bench/api-accounts.ts, profiled).
 */
export function textResponse(text: string, init: ResponseInit): Response {
  const response = new Response(text, init);
  textBodies.set(response, text);
  return response;
}

/** The text a response was made with by textResponse, if it was. */
export function textBodyOf(response: Response): string | undefined {
  return textBodies.get(response);
}
