import type { ComponentProps, ReactNode } from "react";

/** Shared looks: one place for the button and badge styles of the dashboard. */

const focusRing = "focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-blue-600";
const buttonTones = {
  primary: "bg-slate-900 text-white hover:bg-slate-700 disabled:bg-slate-400",
  secondary: "border border-slate-300 bg-white text-slate-900 hover:bg-slate-100 disabled:text-slate-400",
  danger: "bg-red-700 text-white hover:bg-red-800 disabled:bg-red-300",
} as const;
export type ButtonTone = keyof typeof buttonTones;

export function buttonClass(tone: ButtonTone = "primary", size: "sm" | "md" = "md"): string {
  const padding = size === "sm" ? "px-2.5 py-1 text-sm" : "px-4 py-2 text-sm";
  return `inline-flex items-center justify-center rounded-md font-medium disabled:cursor-not-allowed ${padding} ${buttonTones[tone]} ${focusRing}`;
}

export function Button({
  tone = "primary",
  size = "md",
  className = "",
  ...props
}: ComponentProps<"button"> & { tone?: ButtonTone; size?: "sm" | "md" }) {
  return <button type="button" {...props} className={`${buttonClass(tone, size)} ${className}`} />;
}

const badgeTones = {
  green: "bg-green-100 text-green-900 ring-green-600/30",
  amber: "bg-amber-100 text-amber-900 ring-amber-600/30",
  red: "bg-red-100 text-red-900 ring-red-600/30",
  slate: "bg-slate-100 text-slate-800 ring-slate-500/30",
} as const;

export function Badge({ tone, children }: { tone: keyof typeof badgeTones; children: ReactNode }) {
  return (
    <span
      className={`inline-flex rounded-full px-2 py-0.5 text-xs font-medium whitespace-nowrap ring-1 ring-inset ${badgeTones[tone]}`}
    >
      {children}
    </span>
  );
}

export function Notice({ tone, children }: { tone: "info" | "warning" | "error" | "success"; children: ReactNode }) {
  const styles = {
    info: "border-blue-200 bg-blue-50 text-blue-900",
    warning: "border-amber-300 bg-amber-50 text-amber-900",
    error: "border-red-300 bg-red-50 text-red-900",
    success: "border-green-300 bg-green-50 text-green-900",
  }[tone];
  return (
    <div role={tone === "error" ? "alert" : "status"} className={`rounded-md border p-3 text-sm ${styles}`}>
      {children}
    </div>
  );
}

export const inputClass = `block w-full rounded-md border border-slate-300 bg-white px-3 py-2 text-sm shadow-sm ${focusRing}`;
export const linkClass = `text-blue-700 underline hover:text-blue-900 ${focusRing}`;
