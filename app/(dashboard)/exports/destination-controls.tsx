"use client";

import { useEffect, useId, useRef, useState, type FormEvent } from "react";
import { Dialog, DialogFormButtons } from "@/components/dialog";
import { Button, Notice, inputClass } from "@/components/ui";
import { useAction } from "@/components/use-action";
import { KEEP_SECRET_HINT, type DestinationType } from "@/lib/exports/secret-address";
import { createDestinationAction, updateDestinationAction } from "./actions";
import { FORMATS, TYPES } from "./destination-types";

export type OrderChoice = { id: string; name: string; status: string };
export type DestinationInitial = {
  id: string;
  name: string;
  type: DestinationType;
  config: Record<string, unknown>;
  allOrders: boolean;
  orderIds: string[];
  format: string;
  keyTemplate: string;
  approval: "none" | "on_warning";
};

/** The add and edit form of a destination, in a dialog. Secrets are never shown: on edit, an empty one keeps the stored one. */
export function DestinationForm({
  orders,
  initial,
  defaultTemplate,
}: {
  orders: OrderChoice[];
  initial?: DestinationInitial;
  defaultTemplate: string;
}) {
  const [open, setOpen] = useState(false);
  const [type, setType] = useState<DestinationType>(initial?.type ?? "s3");
  const [allOrders, setAllOrders] = useState(initial?.allOrders ?? true);
  const [secretName, setSecretName] = useState(TYPES[type].secrets[0]!.name);
  const { pending, error, errorField, run, clearError } = useAction();
  const formId = useId();
  const editing = initial !== undefined;
  const formRef = useRef<HTMLFormElement>(null);
  const noticeRef = useRef<HTMLDivElement>(null);
  // The form is taller than the dialog: the buyer is at its foot when they submit. A refusal goes
  // by the field it names, and the focus (and so the view) moves to that field, else to the notice.
  const fieldNames = new Set([
    "name",
    "secret",
    "orders",
    "format",
    "template",
    "approval",
    ...TYPES[type].fields.map((f) => f.name),
  ]);
  const shownField = errorField && fieldNames.has(errorField) ? errorField : undefined;
  useEffect(() => {
    if (!error) return;
    const field = shownField && formRef.current?.querySelector<HTMLElement>(`[name="${shownField}"]`);
    if (field) field.focus();
    else noticeRef.current?.focus();
  }, [error, shownField]);
  const errorFor = (name: string) => (shownField === name ? error : undefined);
  const errorId = (name: string) => `${formId}-${name}-error`;

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const fields: Record<string, string | boolean | number> = {};
    for (const field of TYPES[type].fields) {
      if (field.kind === "checkbox") fields[field.name] = form.get(field.name) === "on";
      else {
        const value = String(form.get(field.name) ?? "").trim();
        if (value !== "") fields[field.name] = field.kind === "number" ? Number(value) : value;
      }
    }
    const secret = String(form.get("secret") ?? "");
    if (secret !== "") fields[secretName] = secret;
    const input = {
      name: String(form.get("name") ?? ""),
      type,
      fields,
      orders: allOrders ? ("all" as const) : form.getAll("orderIds").map(String),
      format: String(form.get("format") ?? "original") as "original",
      template: String(form.get("template") ?? ""),
      approval: form.get("approval") === "on_warning" ? ("on_warning" as const) : ("none" as const),
    };
    run(
      () =>
        editing ? updateDestinationAction({ ...input, destinationId: initial.id }) : createDestinationAction(input),
      () => setOpen(false),
    );
  }

  const secret = TYPES[type].secrets.find(({ name }) => name === secretName) ?? TYPES[type].secrets[0]!;
  return (
    <>
      <Button
        tone={editing ? "secondary" : "primary"}
        size={editing ? "sm" : "md"}
        onClick={() => (clearError(), setOpen(true))}
      >
        {editing ? (
          <>
            Edit<span className="sr-only"> {initial.name}</span>
          </>
        ) : (
          "Add destination"
        )}
      </Button>
      <Dialog
        open={open}
        title={editing ? `Edit “${initial.name}”` : "Add an export destination"}
        onClose={() => setOpen(false)}
      >
        <form ref={formRef} onSubmit={submit} noValidate className="space-y-4" aria-describedby={`${formId}-about`}>
          <p id={`${formId}-about`} className="text-sm text-slate-600">
            Every delivered order (and every new version of its tables) is copied here. Secrets are stored encrypted and
            never shown again.
          </p>
          {error && !shownField && (
            <div ref={noticeRef} tabIndex={-1} className="outline-none">
              <Notice tone="error">{error}</Notice>
            </div>
          )}
          <LabelledInput
            id={`${formId}-name`}
            name="name"
            label="Name"
            defaultValue={initial?.name}
            error={errorFor("name")}
          />
          {!editing && (
            <fieldset className="space-y-1">
              <legend className="text-sm font-medium">Type</legend>
              {(Object.keys(TYPES) as DestinationType[]).map((each) => (
                <label key={each} className="flex items-center gap-2 text-sm">
                  <input
                    type="radio"
                    name="type"
                    value={each}
                    checked={type === each}
                    onChange={() => {
                      setType(each);
                      setSecretName(TYPES[each].secrets[0]!.name);
                    }}
                  />
                  {TYPES[each].label}
                </label>
              ))}
            </fieldset>
          )}
          {TYPES[type].fields.map((field) =>
            field.kind === "checkbox" ? (
              <label key={`${type}-${field.name}`} className="flex items-center gap-2 text-sm">
                <input type="checkbox" name={field.name} defaultChecked={initial?.config[field.name] === true} />
                {field.label}
              </label>
            ) : (
              <LabelledInput
                key={`${type}-${field.name}`}
                id={`${formId}-${field.name}`}
                name={field.name}
                label={field.label}
                hint={field.hint}
                placeholder={field.placeholder}
                inputMode={field.kind === "number" ? "numeric" : undefined}
                error={errorFor(field.name)}
                defaultValue={
                  initial?.config[field.name] === undefined ? undefined : String(initial.config[field.name])
                }
              />
            ),
          )}
          {TYPES[type].secrets.length > 1 && (
            <div className="space-y-1">
              <label htmlFor={`${formId}-secret-kind`} className="block text-sm font-medium">
                Sign in with
              </label>
              <select
                id={`${formId}-secret-kind`}
                className={inputClass}
                value={secretName}
                onChange={(event) => setSecretName(event.target.value)}
              >
                {TYPES[type].secrets.map((choice) => (
                  <option key={choice.name} value={choice.name}>
                    {choice.label}
                  </option>
                ))}
              </select>
            </div>
          )}
          <div className="space-y-1">
            <label htmlFor={`${formId}-secret`} className="block text-sm font-medium">
              {secret.label}
            </label>
            {secret.multiline ? (
              <textarea
                id={`${formId}-secret`}
                name="secret"
                rows={4}
                autoComplete="off"
                spellCheck={false}
                className={`${inputClass} font-mono`}
                {...invalidProps(errorFor("secret"), errorId("secret"))}
              />
            ) : (
              <input
                id={`${formId}-secret`}
                name="secret"
                type="password"
                autoComplete="off"
                className={inputClass}
                {...invalidProps(errorFor("secret"), errorId("secret"))}
              />
            )}
            <FieldError id={errorId("secret")} error={errorFor("secret")} />
            <p className="text-xs text-slate-600">
              {editing ? KEEP_SECRET_HINT[type] : ""}Write-only: it is never shown again.
            </p>
          </div>
          <fieldset className="space-y-1">
            <legend className="text-sm font-medium">Orders</legend>
            <FieldError id={errorId("orders")} error={errorFor("orders")} />
            <label className="flex items-center gap-2 text-sm">
              <input type="radio" name="orders" checked={allOrders} onChange={() => setAllOrders(true)} />
              All orders, including future ones
            </label>
            <label className="flex items-center gap-2 text-sm">
              <input type="radio" name="orders" checked={!allOrders} onChange={() => setAllOrders(false)} />
              Only these orders
            </label>
            {!allOrders && (
              <div className="max-h-40 space-y-1 overflow-y-auto rounded-md border border-slate-200 p-2">
                {orders.length === 0 && <p className="text-sm text-slate-600">No orders yet.</p>}
                {orders.map((order) => (
                  <label key={order.id} className="flex items-start gap-2 text-sm break-all">
                    <input
                      type="checkbox"
                      name="orderIds"
                      value={order.id}
                      defaultChecked={initial?.orderIds.includes(order.id)}
                      className="mt-1"
                    />
                    {order.name} ({order.status})
                  </label>
                ))}
              </div>
            )}
          </fieldset>
          <div className="space-y-1">
            <label htmlFor={`${formId}-format`} className="block text-sm font-medium">
              What to export
            </label>
            <select
              id={`${formId}-format`}
              name="format"
              {...invalidProps(errorFor("format"), errorId("format"))}
              defaultValue={initial?.format ?? "original"}
              className={inputClass}
            >
              {FORMATS.map((format) => (
                <option key={format.value} value={format.value}>
                  {format.label}
                </option>
              ))}
            </select>
            <FieldError id={errorId("format")} error={errorFor("format")} />
          </div>
          <fieldset className="space-y-1" aria-describedby={`${formId}-approval-hint`}>
            <legend className="text-sm font-medium">A table version with quality warnings</legend>
            <FieldError id={errorId("approval")} error={errorFor("approval")} />
            <label className="flex items-center gap-2 text-sm">
              <input type="radio" name="approval" value="none" defaultChecked={initial?.approval !== "on_warning"} />
              Export it like any other
            </label>
            <label className="flex items-center gap-2 text-sm">
              <input
                type="radio"
                name="approval"
                value="on_warning"
                defaultChecked={initial?.approval === "on_warning"}
              />
              Wait for my approval on this page
            </label>
            <p id={`${formId}-approval-hint`} className="text-xs text-slate-600">
              Every version is checked before it goes out; one whose quality is not passed (warned, or released by us
              after a hold) can wait here until you approve or skip it.
            </p>
          </fieldset>
          <LabelledInput
            id={`${formId}-template`}
            name="template"
            label="Key template"
            defaultValue={initial?.keyTemplate ?? defaultTemplate}
            hint="From {order_id}, {order_name}, {table}, {version}, {file_name}, {file_id}, {date}; ends in {file_name} or {file_id}."
            error={errorFor("template")}
          />
          <DialogFormButtons
            submitLabel={editing ? "Save" : "Add destination"}
            pendingLabel="Saving…"
            pending={pending}
            onCancel={() => setOpen(false)}
          />
        </form>
      </Dialog>
    </>
  );
}

function LabelledInput({
  id,
  name,
  label,
  hint,
  placeholder,
  defaultValue,
  inputMode,
  error,
}: {
  id: string;
  name: string;
  label: string;
  hint?: string;
  placeholder?: string;
  defaultValue?: string;
  inputMode?: "numeric";
  /** A refusal about this field, shown under it. */
  error?: string;
}) {
  const describedBy = [error && `${id}-error`, hint && `${id}-hint`].filter(Boolean).join(" ");
  return (
    <div className="space-y-1">
      <label htmlFor={id} className="block text-sm font-medium">
        {label}
      </label>
      <input
        id={id}
        name={name}
        defaultValue={defaultValue}
        placeholder={placeholder}
        inputMode={inputMode}
        aria-describedby={describedBy || undefined}
        aria-invalid={error ? true : undefined}
        autoComplete="off"
        spellCheck={false}
        className={`${inputClass} ${error ? "border-red-600" : ""}`}
      />
      <FieldError id={`${id}-error`} error={error} />
      {hint && (
        <p id={`${id}-hint`} className="text-xs text-slate-600">
          {hint}
        </p>
      )}
    </div>
  );
}

/** A field's aria-invalid and aria-describedby while a refusal is about it. */
function invalidProps(error: string | undefined, errorId: string) {
  return error ? { "aria-invalid": true, "aria-describedby": errorId } : {};
}

/** A refusal shown under the field it is about. */
function FieldError({ id, error }: { id: string; error?: string }) {
  if (!error) return null;
  return (
    <p id={id} className="text-sm font-medium text-red-800" data-testid="field-error">
      {error}
    </p>
  );
}
