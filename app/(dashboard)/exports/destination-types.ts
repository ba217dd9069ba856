import type { DestinationType } from "@/lib/exports/secret-address";

/** What the destination form asks for each type of destination, and the export formats it offers. */

type Field = {
  name: string;
  label: string;
  kind?: "text" | "number" | "checkbox";
  hint?: string;
  placeholder?: string;
};
type SecretChoice = { name: string; label: string; multiline?: boolean };

/** Each type's settings (the contract's names) and the secrets it takes, one of them. */
export const TYPES: Record<DestinationType, { label: string; fields: Field[]; secrets: SecretChoice[] }> = {
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

export const FORMATS = [
  { value: "original", label: "The original files" },
  { value: "parquet", label: "Parquet (data files; others as they are)" },
  { value: "csv", label: "CSV (data files; others as they are)" },
  { value: "jsonl", label: "JSON Lines (data files; others as they are)" },
];
