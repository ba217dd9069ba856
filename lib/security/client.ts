import { headers } from "next/headers";
import { CLIENT_IP_HEADER } from "./header";
import type { Actor } from "./log";

/** The signed-in buyer acting through the dashboard, with their address (pages and server actions only). */
export async function sessionActor(): Promise<Actor> {
  return { actor: "session", ip: (await headers()).get(CLIENT_IP_HEADER) };
}
