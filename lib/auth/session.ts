import { getServerSession } from "next-auth";
import { cookies } from "next/headers";
import { redirect } from "next/navigation";
import { sweepExpiredSignInRecords } from "./cleanup";
import { authOptions } from "./options";

/** next-auth's session cookie, on http and (with the __Secure- prefix) on https. */
const SESSION_COOKIES = ["next-auth.session-token", "__Secure-next-auth.session-token"];

export type SignedInBuyer = { id: string; email: string };

/** The signed-in buyer, or undefined (server components, server actions and route handlers). */
export async function currentBuyer(): Promise<SignedInBuyer | undefined> {
  // Reading cookies makes the page per-request; without a session cookie there is nothing to look up.
  const cookieStore = await cookies();
  if (!SESSION_COOKIES.some((name) => cookieStore.has(name))) return undefined;
  sweepExpiredSignInRecords();
  const session = await getServerSession(authOptions());
  if (!session?.user?.id || !session.user.email) return undefined;
  return { id: session.user.id, email: session.user.email };
}

/** The signed-in buyer; anyone else is sent to the sign-in page, and back to `returnTo` afterwards. */
export async function requireBuyer(returnTo: string): Promise<SignedInBuyer> {
  const buyer = await currentBuyer();
  if (!buyer) redirect(`/signin?${new URLSearchParams({ callbackUrl: returnTo })}`);
  return buyer;
}
