/**
 * The sliding window weighs the previous fixed window by the share it still covers, floored (the
 * library's algorithm): requests straddling a minute boundary can let a 61st through. A test that
 * counts to the limit starts far enough from the boundary to finish inside one fixed window.
 */
export async function startOfAFixedWindow(needMs = 20_000): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < needMs) await new Promise((resolve) => setTimeout(resolve, left + 50));
}
