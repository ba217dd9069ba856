import { describe, expect, it } from "vitest";
import { routePattern } from "./observability";

const ORDER = "ord_0123456789abcdef0123456789abcdef";
const FILE = "fil_0123456789abcdef0123456789abcdef";

describe("routePattern", () => {
  it.each([
    // Paths of the API's route table are named by its dispatcher; what is left is unknown.
    ["/api/v1/invoices/1/2/3", 404, "/api/v1/{unknown}"],
    ["/api/delta-sharing/nothing", 404, "/api/delta-sharing/{unknown}"],
    ["/api/dl/abc.def", 200, "/api/dl/{token}"],
    ["/api/auth/signin/email", 200, "/api/auth/{action}"],
    ["/api/health", 200, "/api/health"],
    [`/orders/${ORDER}/files/${FILE}`, 302, "/orders/{id}/files/{fileId}"],
    [`/orders/${ORDER}`, 200, "/orders/{id}"],
    ["/share/dsl_secret-token/files/x", 302, "/share/{token}/files/{fileId}"],
    ["/share/dsl_secret-token?refused", 200, "/share/{token}"],
    ["/keys", 200, "/keys"],
    ["/signin/confirm?token=secret", 200, "/signin/confirm"],
    ["/_next/static/chunks/abc.js", 200, "/_next/static"],
    ["/wp-admin.php", 404, "{not found}"],
    ["/orders/not-an-id", 404, "{not found}"],
    ["/some/new/page", 200, "{other}"],
  ])("%s (%i) -> %s", (url, status, pattern) => {
    expect(routePattern(url, status)).toBe(pattern);
  });
});
