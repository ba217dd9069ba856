/**
 * The sliding window weighs the previous fixed window by the share it still covers, floored (the
 * library's algorithm): requests straddling a window boundary can let one past the limit through.
 * A test that counts to a limit starts far enough from the boundary to finish inside one fixed
 * window (windows start at multiples of their length since the epoch).
 */
export async function startOfAFixedWindow(needMs = 20_000, windowSeconds = 60): Promise<void> {
  const windowMs = windowSeconds * 1000;
  const left = windowMs - (Date.now() % windowMs);
  if (left < needMs) await new Promise((resolve) => setTimeout(resolve, left + 50));
}

/**
 * A test's title saying why it is skipped when REDIS_URL is unset, the one reason such a test may
 * skip: the reporter lists skipped tests by title. With REDIS_URL set the test runs, and an
 * unreachable Redis fails it.
 */
export function needingRedis(title: string): string {
  return process.env.REDIS_URL ? title : `${title} (skipped: needs REDIS_URL)`;
}
