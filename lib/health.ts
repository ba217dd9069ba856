import { db } from "./db/client";

/** Whether the database answers, within a short deadline. */
export async function databaseIsUp(timeoutMs = 2000): Promise<boolean> {
  const ping = db().$queryRaw`SELECT 1`.then(
    () => true,
    () => false,
  );
  const deadline = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), timeoutMs).unref());
  return Promise.race([ping, deadline]);
}
