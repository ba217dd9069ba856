"use client";

import { useState, type Ref } from "react";
import { inputClass } from "./ui";

/**
 * A labelled text input with its hint, a character counter when it has a limit, and an inline
 * error tied to it (aria-invalid, aria-describedby) instead of the browser's tooltip.
 */
export function TextField({
  id,
  name,
  label,
  hint,
  error,
  maxLength,
  placeholder,
  inputRef,
  onInput,
}: {
  id: string;
  name: string;
  label: string;
  hint?: string;
  error?: string;
  maxLength?: number;
  placeholder?: string;
  inputRef?: Ref<HTMLInputElement>;
  onInput?: () => void;
}) {
  const [length, setLength] = useState(0);
  const describedBy = [error && `${id}-error`, hint && `${id}-hint`, maxLength && `${id}-count`]
    .filter(Boolean)
    .join(" ");
  return (
    <div className="space-y-1">
      <label htmlFor={id} className="block text-sm font-medium">
        {label}
      </label>
      <input
        id={id}
        name={name}
        ref={inputRef}
        maxLength={maxLength}
        placeholder={placeholder}
        aria-invalid={error ? true : undefined}
        aria-describedby={describedBy || undefined}
        onInput={(event) => {
          setLength(event.currentTarget.value.length);
          onInput?.();
        }}
        className={`${inputClass} ${error ? "border-red-600" : ""}`}
      />
      {error && (
        <p id={`${id}-error`} className="text-sm font-medium text-red-800" data-testid={`${id}-error`}>
          {error}
        </p>
      )}
      <div className="flex justify-between gap-3 text-xs text-slate-600">
        {hint ? <p id={`${id}-hint`}>{hint}</p> : <span />}
        {maxLength !== undefined && (
          <span id={`${id}-count`} className="shrink-0 tabular-nums" data-testid={`${id}-count`}>
            {length}/{maxLength}
          </span>
        )}
      </div>
    </div>
  );
}
