import { databaseIsUp } from "@/lib/http/health";

export const dynamic = "force-dynamic";

/** Liveness for load balancers and CI: 200 when the database answers, 503 otherwise. */
export async function GET() {
  const up = await databaseIsUp();
  return Response.json(
    { status: up ? "ok" : "degraded", database: up ? "up" : "down" },
    { status: up ? 200 : 503, headers: { "Cache-Control": "no-store" } },
  );
}
