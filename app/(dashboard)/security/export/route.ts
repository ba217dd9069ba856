import { currentBuyer } from "@/lib/auth/session";
import { SECURITY_EVENT_KINDS, listSecurityEvents, securityEventsCsv } from "@/lib/security/log";

/** The signed-in buyer's security log as CSV (same filter as the page), for their own records. */
export async function GET(request: Request) {
  const buyer = await currentBuyer();
  if (!buyer) return new Response("Sign in to export your security log.\n", { status: 401 });
  const requested = new URL(request.url).searchParams.get("kind");
  const kind = SECURITY_EVENT_KINDS.find((known) => known === requested);
  const events = await listSecurityEvents(buyer.id, { kind, limit: 100_000 });
  return new Response(securityEventsCsv(events), {
    headers: {
      "Content-Type": "text/csv; charset=utf-8",
      "Content-Disposition": `attachment; filename="security-log-${new Date().toISOString().slice(0, 10)}.csv"`,
      "Cache-Control": "private, no-store",
    },
  });
}
