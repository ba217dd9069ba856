"use client";

import { useSyncExternalStore } from "react";
import { Bar, CartesianGrid, ComposedChart, Legend, Line, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import { sharedScale } from "@/lib/dashboard/chart-scale";
import type { VersionPoint } from "@/lib/tables/quality-views";

const SERIES = [
  { key: "inserted", label: "Inserted", color: "#16a34a" },
  { key: "updated", label: "Updated", color: "#d97706" },
  { key: "deleted", label: "Deleted", color: "#dc2626" },
] as const;
const ROWS_COLOR = "#1d4ed8";
/** The legend in reading order (recharts sorts it by name otherwise): the line, then the bars as stacked. */
const LEGEND_ORDER = ["rows", ...SERIES.map(({ key }) => key)];
const AXIS_TITLE = { angle: -90, fontSize: 11, fill: "#475569" } as const;

const count = (value: number) => value.toLocaleString("en-US");
const subscribeNothing = () => () => {};

/**
 * A table's rows (a line) and its inserted/updated/deleted rows (stacked bars) per version, oldest
 * first (recharts, sized to its box so it reads at 390 px): on one titled scale, or on two (bars
 * left, rows right, each titled) when the rows dwarf the changes (sharedScale). Screen
 * readers get a sentence, and everyone the numbers in a table behind a disclosure, as the usage
 * chart does. Drawn in the browser only: recharts sets style attributes, which the
 * Content-Security-Policy refuses in server-rendered HTML.
 */
export function VersionChart({ table, points }: { table: string; points: VersionPoint[] }) {
  const inBrowser = useSyncExternalStore(
    subscribeNothing,
    () => true,
    () => false,
  );
  if (points.length === 0) return null;
  const shared = sharedScale(points);
  const rowsAxis = shared ? "changes" : "rows";
  const first = points[0]!;
  const last = points[points.length - 1]!;
  const changed = points.reduce((sum, point) => sum + point.inserted + point.updated + point.deleted, 0);
  const summary =
    `Rows and changes of ${table} over versions ${first.version} to ${last.version}: ` +
    `${count(first.rows)} rows at version ${first.version}, ${count(last.rows)} at version ${last.version}, ` +
    `${count(changed)} rows changed in all.`;
  return (
    <figure
      className="space-y-2"
      data-testid="version-chart"
      data-versions={points.length}
      data-scales={shared ? 1 : 2}
    >
      <div role="img" aria-label={summary}>
        {inBrowser ? (
          <div className="h-48 w-full" aria-hidden="true" data-testid="version-chart-drawn">
            <ResponsiveContainer width="100%" height="100%">
              <ComposedChart data={points} margin={{ top: 4, right: 4, bottom: 0, left: 0 }} accessibilityLayer={false}>
                <CartesianGrid vertical={false} stroke="#e2e8f0" />
                <XAxis
                  dataKey="version"
                  tickFormatter={(version) => `v${version}`}
                  tick={{ fontSize: 11, fill: "#475569" }}
                  tickLine={false}
                  minTickGap={12}
                />
                <YAxis
                  yAxisId="changes"
                  allowDecimals={false}
                  width={56}
                  tick={{ fontSize: 11, fill: "#475569" }}
                  tickLine={false}
                  label={{ ...AXIS_TITLE, value: shared ? "Rows" : "Rows changed", position: "insideLeft" }}
                />
                {!shared && (
                  <YAxis
                    yAxisId="rows"
                    orientation="right"
                    allowDecimals={false}
                    width={60}
                    tick={{ fontSize: 11, fill: ROWS_COLOR }}
                    tickLine={false}
                    label={{ ...AXIS_TITLE, angle: 90, value: "Rows", position: "insideRight", fill: ROWS_COLOR }}
                  />
                )}
                <Tooltip
                  labelFormatter={(version) => `Version ${version}`}
                  formatter={(value, name) => [count(Number(value)), name]}
                  cursor={{ fill: "#f1f5f9" }}
                />
                <Legend
                  wrapperStyle={{ fontSize: 12 }}
                  itemSorter={(item) => LEGEND_ORDER.indexOf(String(item.dataKey))}
                />
                {SERIES.map(({ key, label, color }) => (
                  <Bar
                    key={key}
                    yAxisId="changes"
                    dataKey={key}
                    name={label}
                    stackId="changes"
                    fill={color}
                    isAnimationActive={false}
                  />
                ))}
                <Line
                  yAxisId={rowsAxis}
                  dataKey="rows"
                  name="Rows"
                  stroke={ROWS_COLOR}
                  strokeWidth={2}
                  dot={{ r: 3 }}
                  isAnimationActive={false}
                />
              </ComposedChart>
            </ResponsiveContainer>
          </div>
        ) : (
          <div className="h-48 w-full rounded bg-slate-50" aria-hidden="true" />
        )}
      </div>
      <figcaption className="text-xs text-slate-600">
        {shared
          ? "Rows (line) and rows inserted, updated and deleted (stacked bars) per version, on one scale."
          : "Rows (line, right scale) and rows inserted, updated and deleted (stacked bars, left scale) per version."}
      </figcaption>
      <details className="text-xs">
        <summary className="cursor-pointer text-slate-600">Show the numbers</summary>
        {/* Focusable, so the scrolling box can be scrolled with the keyboard. */}
        <div
          className="mt-2 max-h-64 overflow-auto"
          tabIndex={0}
          role="region"
          aria-label={`Rows and changes of ${table}, per version`}
        >
          <table className="min-w-full text-left" data-testid="version-chart-numbers">
            <caption className="sr-only">{summary}</caption>
            <thead>
              <tr>
                <th scope="col" className="pr-3">
                  Version
                </th>
                <th scope="col" className="pr-3">
                  Rows
                </th>
                {SERIES.map(({ key, label }) => (
                  <th key={key} scope="col" className="pr-3">
                    {label}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {points.map((point) => (
                <tr key={point.version}>
                  <th scope="row" className="pr-3 font-normal">
                    {point.version}
                  </th>
                  <td className="pr-3 tabular-nums">{count(point.rows)}</td>
                  {SERIES.map(({ key }) => (
                    <td key={key} className="pr-3 tabular-nums">
                      {count(point[key])}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
}
