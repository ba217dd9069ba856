/**
 * The time the Social API allowance is counted in. CLOCK_START (ISO 8601) is for tests only: the
 * clock then starts at that instant when first used (per route bundle, so within the seconds a
 * server takes to warm up) and runs on at normal speed, so a test can cross a month boundary
 * without waiting. Unset, it is the system clock.
 */
const offsetMs = (() => {
  const start = process.env.CLOCK_START;
  if (!start) return 0;
  const at = Date.parse(start);
  if (Number.isNaN(at)) throw new Error(`CLOCK_START is not an ISO 8601 time: ${start}`);
  return at - Date.now();
})();

export function now(): Date {
  return new Date(Date.now() + offsetMs);
}
