import { db } from "../lib/db/client";

/**
 * What the server's job worker has made of an order's data so far: its files' profiles and renditions, its tables'
 * publications, and their pg-boss jobs (state, retries, last output). Put in the error of a test that waited too long
 * for the worker, so CI's output says where it stopped (a job failed and waiting for its retry, a publication held).
 */
export async function workerStateOf(orderId: string): Promise<string> {
  const files = await db().orderFile.findMany({
    where: { orderId },
    select: {
      id: true,
      name: true,
      profileStatus: true,
      profileError: true,
      publicationId: true,
      renditions: { select: { format: true, status: true, error: true } },
    },
  });
  const publications = await db().tablePublication.findMany({
    where: { table: { orderId } },
    select: { id: true, status: true, seq: true, error: true, createdAt: true, finishedAt: true },
  });
  const ids = [...files.map((file) => file.id), ...publications.map((publication) => publication.id)];
  const jobs = await db().$queryRaw<unknown[]>`
    SELECT name, state, retry_count, start_after, output, created_on, started_on, completed_on FROM pgboss.job
    WHERE data->>'publicationId' = ANY(${ids}) OR data->>'fileId' = ANY(${ids}) ORDER BY created_on`;
  return JSON.stringify({ files, publications, jobs });
}
