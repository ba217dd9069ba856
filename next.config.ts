import type { NextConfig } from "next";

const nextConfig: NextConfig = {
  // Keep the database driver as a plain Node dependency rather than bundling it.
  serverExternalPackages: ["pg", "@prisma/adapter-pg"],
  poweredByHeader: false,
};

export default nextConfig;
