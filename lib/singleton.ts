/**
 * One value per process for `key`, made on first use. Next.js bundles every route on its own, so
 * module-level state would exist once per route (each API endpoint would get its own rate limit,
 * its own connection pool); state that must be one per process is kept here instead.
 */
const registry = ((
  globalThis as unknown as { datasetAccessSingletons?: Map<string, unknown> }
).datasetAccessSingletons ??= new Map());

export function processSingleton<T>(key: string, make: () => T): T {
  if (!registry.has(key)) registry.set(key, make());
  return registry.get(key) as T;
}

/** Forgets the value and returns it (to close it), so the next `processSingleton(key, ...)` makes a new one. */
export function dropProcessSingleton<T>(key: string): T | undefined {
  const value = registry.get(key) as T | undefined;
  registry.delete(key);
  return value;
}
