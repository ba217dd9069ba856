import type { DefaultSession } from "next-auth";

declare module "next-auth" {
  /** The session carries the buyer's id (lib/auth/options.ts, session callback). */
  interface Session {
    user: { id: string; email: string } & DefaultSession["user"];
  }
}
