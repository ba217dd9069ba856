import type { NextConfig } from "next";
import { API_HEADERS, SECURITY_HEADERS } from "./lib/security-headers";

const headerList = (headers: Record<string, string>) => Object.entries(headers).map(([key, value]) => ({ key, value }));

const nextConfig: NextConfig = {
  // Plain Node dependencies rather than bundled: the database driver, and the logger, metrics and
  // S3 client, whose process-wide state (one registry, one client) the launcher shares.
  serverExternalPackages: [
    "pg",
    "@prisma/adapter-pg",
    "pino",
    "prom-client",
    "@aws-sdk/client-s3",
    "@aws-sdk/lib-storage",
    "@aws-sdk/s3-request-presigner",
    // Export destinations (lib/exports): ssh2 loads optional native bindings a bundler cannot follow.
    "ssh2",
    "@azure/storage-blob",
  ],
  poweredByHeader: false,
  async headers() {
    return [
      { source: "/:path*", headers: headerList(SECURITY_HEADERS) },
      { source: "/api/:path*", headers: headerList(API_HEADERS) },
      // A share page's URL is its credential: never sent on as a Referer, never indexed (later rules win).
      {
        source: "/share/:path*",
        headers: [
          { key: "Referrer-Policy", value: "no-referrer" },
          { key: "X-Robots-Tag", value: "noindex, nofollow" },
        ],
      },
    ];
  },
};

export default nextConfig;
