"use client";

import { useId, useState, type FormEvent } from "react";
import { Dialog, DialogFormButtons } from "@/components/dialog";
import { Button, Notice, inputClass } from "@/components/ui";
import { useAction } from "@/components/use-action";
import { KEEP_SECRET_HINT, type DestinationType } from "@/lib/exports/secret-address";
import { createDestinationAction, updateDestinationAction } from "./actions";

type Field = {
  name: string;
  label: string;
  kind?: "text" | "number" | "checkbox";
  hint?: string;
  placeholder?: string;
};
type SecretChoice = { name: string; label: string; multiline?: boolean };

/** Each type's settings (the contract's names) and the secrets it takes, one of them. */
const TYPES: Record<DestinationType, { label: string; fields: Field[]; secrets: SecretChoice[] }> = {
  s3: {
    label: "Amazon S3 or S3-compatible (R2, MinIO, GCS)",
    fields: [
      { name: "bucket", label: "Bucket", placeholder: "acme-data-lake" },
      { name: "region", label: "Region", placeholder: "us-east-1", hint: "auto for R2." },
      {
        name: "endpoint",
        label: "Endpoint (optional)",
        placeholder: "https://<account>.r2.cloudflarestorage.com",
        hint: "Leave empty for AWS. For GCS: https://storage.googleapis.com with HMAC keys.",
      },
      {
        name: "force_path_style",
        label: "Path-style addressing (MinIO and most self-hosted stores)",
        kind: "checkbox",
      },
      { name: "prefix", label: "Key prefix (optional)", placeholder: "datasets/" },
      { name: "access_key_id", label: "Access key id" },
    ],
    secrets: [{ name: "secret_access_key", label: "Secret access key" }],
  },
  azure: {
    label: "Azure Blob Storage",
    fields: [
      { name: "account_url", label: "Account URL", placeholder: "https://acme.blob.core.windows.net" },
      { name: "container", label: "Container", placeholder: "datasets" },
      { name: "prefix", label: "Prefix (optional)", placeholder: "incoming/" },
    ],
    secrets: [
      { name: "account_key", label: "Account key" },
      { name: "sas_token", label: "SAS token" },
    ],
  },
  sftp: {
    label: "SFTP",
    fields: [
      { name: "host", label: "Host", placeholder: "sftp.example.com" },
      { name: "port", label: "Port", kind: "number", placeholder: "22" },
      { name: "username", label: "User name" },
      { name: "directory", label: "Directory", placeholder: "/incoming", hint: "Files are written only inside it." },
      {
        name: "host_key_sha256",
        label: "Host key fingerprint",
        placeholder: "SHA256:…",
        hint: "As ssh-keygen -lf prints it. A server presenting another key is refused.",
      },
    ],
    secrets: [
      { name: "password", label: "Password" },
      { name: "private_key", label: "Private key", multiline: true },
    ],
  },
};

const FORMATS = [
  { value: "original", label: "The original files" },
  { value: "parquet", label: "Parquet (data files; others as they are)" },
  { value: "csv", label: "CSV (data files; others as they are)" },
  { value: "jsonl", label: "JSON Lines (data files; others as they are)" },
];

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
  const { pending, error, run, clearError } = useAction();
  const formId = useId();
  const editing = initial !== undefined;

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
        <form onSubmit={submit} noValidate className="space-y-4" aria-describedby={`${formId}-about`}>
          <p id={`${formId}-about`} className="text-sm text-slate-600">
            Every delivered order (and every new version of its tables) is copied here. Secrets are stored encrypted and
            never shown again.
          </p>
          {error && <Notice tone="error">{error}</Notice>}
          <LabelledInput id={`${formId}-name`} name="name" label="Name" defaultValue={initial?.name} />
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
              />
            ) : (
              <input id={`${formId}-secret`} name="secret" type="password" autoComplete="off" className={inputClass} />
            )}
            <p className="text-xs text-slate-600">
              {editing ? KEEP_SECRET_HINT[type] : ""}Write-only: it is never shown again.
            </p>
          </div>
          <fieldset className="space-y-1">
            <legend className="text-sm font-medium">Orders</legend>
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
              defaultValue={initial?.format ?? "original"}
              className={inputClass}
            >
              {FORMATS.map((format) => (
                <option key={format.value} value={format.value}>
                  {format.label}
                </option>
              ))}
            </select>
          </div>
          <fieldset className="space-y-1" aria-describedby={`${formId}-approval-hint`}>
            <legend className="text-sm font-medium">A table version with quality warnings</legend>
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
}: {
  id: string;
  name: string;
  label: string;
  hint?: string;
  placeholder?: string;
  defaultValue?: string;
  inputMode?: "numeric";
}) {
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
        aria-describedby={hint ? `${id}-hint` : undefined}
        autoComplete="off"
        spellCheck={false}
        className={inputClass}
      />
      {hint && (
        <p id={`${id}-hint`} className="text-xs text-slate-600">
          {hint}
        </p>
      )}
    </div>
  );
}
