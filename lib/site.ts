import { headers } from "next/headers";
import { publicOrigin } from "./api/validation";

/** This site's public origin, in server components and server actions (APP_URL, else the request's host). */
export async function siteOrigin(): Promise<string> {
  return publicOrigin({ headers: await headers(), url: "http://localhost/" });
}
