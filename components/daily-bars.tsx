"use client";

import { useSyncExternalStore } from "react";
import { Bar, BarChart, CartesianGrid, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";

export type BarSeries = { key: string; label: string; color: string };
export type BarDay = { day: string } & Record<string, number | string>;

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
/** `2026-11-03` as `Nov 3`: the day's own date, whatever the browser's time zone. */
export const shortDay = (day: string) => `${MONTHS[Number(day.slice(5, 7)) - 1]} ${Number(day.slice(8, 10))}`;

const subscribeNothing = () => () => {};

/**
 * Stacked bars per day with a date axis, a count scale and a tooltip (recharts). Drawn in the
 * browser only: recharts sizes its boxes with style attributes, which the page's
 * Content-Security-Policy refuses in server-rendered HTML but not when set from script.
 */
export function DailyBars({ days, series, unit }: { days: BarDay[]; series: BarSeries[]; unit: string }) {
  const inBrowser = useSyncExternalStore(
    subscribeNothing,
    () => true,
    () => false,
  );
  if (!inBrowser) return <div className="h-40 w-full rounded bg-slate-50" aria-hidden="true" />;
  return (
    <div className="h-40 w-full" aria-hidden="true" data-testid="daily-bars">
      <ResponsiveContainer width="100%" height="100%">
        {/* No keyboard layer: the box is aria-hidden (the sentence and the numbers table stand for it), so nothing in it may take the focus. */}
        <BarChart data={days} margin={{ top: 4, right: 4, bottom: 0, left: 0 }} accessibilityLayer={false}>
          <CartesianGrid vertical={false} stroke="#e2e8f0" />
          <XAxis
            dataKey="day"
            tickFormatter={shortDay}
            tick={{ fontSize: 11, fill: "#475569" }}
            tickLine={false}
            minTickGap={16}
          />
          <YAxis allowDecimals={false} width={36} tick={{ fontSize: 11, fill: "#475569" }} tickLine={false} />
          <Tooltip
            labelFormatter={(day) => `${shortDay(String(day))} (UTC)`}
            formatter={(value, name) => [`${Number(value).toLocaleString("en")} ${unit}`, name]}
            cursor={{ fill: "#f1f5f9" }}
          />
          {series.map(({ key, label, color }) => (
            <Bar key={key} dataKey={key} name={label} stackId="day" fill={color} isAnimationActive={false} />
          ))}
        </BarChart>
      </ResponsiveContainer>
    </div>
  );
}
