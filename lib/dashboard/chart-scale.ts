/**
 * Whether a versions chart draws its rows (a line) and its changes (stacked bars) on one scale or
 * two. Two scales that end up alike (0 to 80 and 0 to 80) only make the reader compare them, so
 * the chart shares one unless the rows dwarf the changes: past ROWS_PER_CHANGE times the tallest
 * bar, the bars would be slivers on the rows' scale and get a scale of their own. Pure.
 */

export const ROWS_PER_CHANGE = 5;

export function sharedScale(points: { rows: number; inserted: number; updated: number; deleted: number }[]): boolean {
  const rows = Math.max(0, ...points.map((point) => point.rows));
  const changes = Math.max(0, ...points.map((point) => point.inserted + point.updated + point.deleted));
  return changes === 0 || rows <= changes * ROWS_PER_CHANGE;
}
