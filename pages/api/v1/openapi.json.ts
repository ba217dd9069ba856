import { serveOpenApiDocument } from "@/lib/api/openapi-route";

// GET only: no request body to parse.
export const config = { api: { bodyParser: false } };

export default serveOpenApiDocument;
