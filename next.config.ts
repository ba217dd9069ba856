import type { NextConfig } from "next";

/** Headers on every response, API and files included (pages also get a nonce CSP from proxy.ts). */
const securityHeaders = [
  { key: "X-Content-Type-Options", value: "nosniff" },
  { key: "Referrer-Policy", value: "strict-origin-when-cross-origin" },
  { key: "X-Frame-Options", value: "DENY" },
  { key: "Permissions-Policy", value: "camera=(), microphone=(), geolocation=(), payment=()" },
  { key: "Cross-Origin-Opener-Policy", value: "same-origin" },
];

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
  ],
  poweredByHeader: false,
  async headers() {
    return [
      { source: "/:path*", headers: securityHeaders },
      // JSON and files: nothing in them may run or be framed, whatever a browser makes of them.
      {
        source: "/api/:path*",
        headers: [{ key: "Content-Security-Policy", value: "default-src 'none'; frame-ancestors 'none'" }],
      },
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
