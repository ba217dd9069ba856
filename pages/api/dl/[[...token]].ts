import { readOnlyNodeRoute } from "@/lib/api/node";
import { serveDownload } from "@/lib/downloads/serve";

// The body is the file: no request body parsing, and no warning for large responses.
export const config = { api: { bodyParser: false, responseLimit: false } };

/**
 * Signed download links (no API key: the token is the authorisation). A Pages Router route,
 * streamed, because App Router responses lose their Content-Length (see lib/downloads/serve.ts).
 * Every path under /api/dl comes here (an optional catch-all), so a missing or extra segment is an
 * invalid link (problem+json) rather than Next.js's HTML 404; a real token has no "/".
 */
export default readOnlyNodeRoute(
  (request, { requestId, query }) => serveDownload(request, [query.token ?? []].flat().join("/"), { requestId }),
  { stream: true },
);
