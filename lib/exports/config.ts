import ipaddr from "ipaddr.js";
import { z } from "zod";
import { CONTROL_CHARACTERS } from "../contract";
import { RENDITION_FORMATS } from "../data-formats";
import { exportPrivateAddressesAllowed, literalHostProblem } from "./network";
import { DEFAULT_KEY_TEMPLATE, keyTemplateProblem, prefixProblem } from "./template";

/**
 * What a destination is: its type's settings and secrets as the dashboard's form and the CLI's
 * JSON file give them (the contract's field names), checked once here. Settings are kept readable;
 * secrets are sealed (./secrets.ts) and never shown or logged again.
 */

export const DESTINATION_TYPES = ["s3", "azure", "sftp"] as const;
export type DestinationType = (typeof DESTINATION_TYPES)[number];
export const EXPORT_FORMATS = ["original", ...RENDITION_FORMATS] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export const DESTINATION_NAME_MAX = 100;

const plain = (what: string, max: number) =>
  z
    .string({ error: `${what} is required.` })
    .trim()
    .min(1, `${what} is required.`)
    .max(max, `${what} is longer than ${max} characters.`)
    .refine((value) => !CONTROL_CHARACTERS.test(value), `${what} contains control characters.`);

/** A secret: kept as typed (no trimming inside), refused with control characters (a PEM key may have line breaks). */
const secret = (what: string, max: number, { multiline = false } = {}) =>
  z
    .string({ error: `${what} is required.` })
    .max(max, `${what} is longer than ${max} characters.`)
    .transform((value) => value.trim())
    .refine((value) => value.length > 0, `${what} is required.`)
    .refine(
      (value) => !(multiline ? /(?![\n\r])\p{Cc}/u : CONTROL_CHARACTERS).test(value),
      `${what} contains control characters.`,
    );

const prefix = z
  .string()
  .trim()
  .max(500, "The prefix is longer than 500 characters.")
  .optional()
  .default("")
  .superRefine((value, context) => {
    const problem = prefixProblem(value);
    if (problem) context.addIssue({ code: "custom", message: problem });
  })
  .transform((value) => (value === "" || value.endsWith("/") ? value : `${value}/`));

/** An http(s) URL a destination connects to: https (http only with EXPORT_ALLOW_PRIVATE=true), no credentials, not a private address written out. */
function serviceUrl(what: string) {
  return plain(what, 2000).superRefine((value, context) => {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      return context.addIssue({ code: "custom", message: `${what} is not a URL (https://...).` });
    }
    if (url.username || url.password) {
      return context.addIssue({ code: "custom", message: `Leave the user name and password out of ${what}.` });
    }
    if (url.search || url.hash) {
      return context.addIssue({ code: "custom", message: `${what} cannot have a query (?...) or fragment (#...).` });
    }
    if (url.protocol !== "https:" && !(url.protocol === "http:" && exportPrivateAddressesAllowed())) {
      return context.addIssue({ code: "custom", message: `${what} must be an https:// URL.` });
    }
    const problem = literalHostProblem(url.hostname);
    if (problem) context.addIssue({ code: "custom", message: `${what}: ${problem}.` });
  });
}

/** S3 bucket names (AWS's rules, with GCS's underscores): 3-63 characters, lower case, not an IP address. */
const bucket = plain("The bucket", 63).refine(
  (value) => /^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$/.test(value) && !value.includes("..") && !ipaddr.isValid(value),
  "The bucket name is not valid: 3 to 63 lower-case letters, digits, dots and hyphens, starting and ending with a letter or digit.",
);

export const s3ConfigSchema = z.object({
  bucket,
  region: plain("The region", 32)
    .default("us-east-1")
    .refine((value) => /^[a-z0-9-]+$/.test(value), "The region is not valid (e.g. us-east-1, or auto for R2)."),
  endpoint: z.union([z.literal("").transform(() => undefined), serviceUrl("The endpoint")]).optional(),
  force_path_style: z.boolean().optional().default(false),
  prefix,
  access_key_id: plain("The access key id", 128),
});
export const s3SecretsSchema = z.object({ secret_access_key: secret("The secret access key", 256) });

export const azureConfigSchema = z.object({
  account_url: serviceUrl("The account URL"),
  container: plain("The container", 63).refine(
    (value) => /^[a-z0-9](?!.*--)[a-z0-9-]{1,61}[a-z0-9]$/.test(value),
    "The container name is not valid: 3 to 63 lower-case letters, digits and single hyphens.",
  ),
  prefix,
});
export const azureSecretsSchema = z.union([
  z.object({
    sas_token: secret("The SAS token", 2000)
      .transform((value) => value.replace(/^\?/, ""))
      .refine((value) => /(^|&)sig=/.test(value), "The SAS token has no signature (sig=...)."),
  }),
  z.object({
    account_key: secret("The account key", 200).refine(
      (value) => /^[A-Za-z0-9+/]+={0,2}$/.test(value),
      "The account key is not base64.",
    ),
  }),
]);

export const sftpConfigSchema = z.object({
  host: plain("The host", 253).superRefine((value, context) => {
    const literal = value.replace(/^\[|\]$/g, "");
    if (!ipaddr.isValid(literal) && !/^(?=.{1,253}$)([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.?)+$/.test(literal)) {
      return context.addIssue({ code: "custom", message: "The host is not a host name or IP address." });
    }
    const problem = literalHostProblem(value);
    if (problem) context.addIssue({ code: "custom", message: `The host: ${problem}.` });
  }),
  port: z.coerce
    .number({ error: "The port must be a number." })
    .int("The port must be a whole number.")
    .min(1, "The port must be from 1 to 65535.")
    .max(65535, "The port must be from 1 to 65535.")
    .default(22),
  username: plain("The user name", 100),
  directory: plain("The directory", 1000).refine(
    (value) => !value.split("/").some((segment) => segment === ".." || segment === "."),
    "The directory cannot contain . or .. folders.",
  ),
  host_key_sha256: plain("The host key fingerprint", 60).refine(
    (value) => /^SHA256:[A-Za-z0-9+/]{43}=?$/.test(value),
    "The host key fingerprint must look like ssh-keygen -lf prints it: SHA256:<43 base64 characters>.",
  ),
});
export const sftpSecretsSchema = z.union([
  z.object({
    private_key: secret("The private key", 16_000, { multiline: true }).refine(
      (value) => /-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(value),
      "The private key is not in OpenSSH or PEM form (-----BEGIN ... PRIVATE KEY-----).",
    ),
  }),
  z.object({ password: secret("The password", 1000) }),
]);

export type S3DestinationConfig = z.output<typeof s3ConfigSchema>;
export type AzureDestinationConfig = z.output<typeof azureConfigSchema>;
export type SftpDestinationConfig = z.output<typeof sftpConfigSchema>;
export type DestinationConfig =
  | { type: "s3"; config: S3DestinationConfig; secrets: z.output<typeof s3SecretsSchema> }
  | { type: "azure"; config: AzureDestinationConfig; secrets: z.output<typeof azureSecretsSchema> }
  | { type: "sftp"; config: SftpDestinationConfig; secrets: z.output<typeof sftpSecretsSchema> };

const SCHEMAS = {
  s3: { config: s3ConfigSchema, secrets: s3SecretsSchema },
  azure: { config: azureConfigSchema, secrets: azureSecretsSchema },
  sftp: { config: sftpConfigSchema, secrets: sftpSecretsSchema },
} as const;

/** Which fields of each type are secrets (sealed, never shown). */
export const SECRET_FIELDS: Record<DestinationType, readonly string[]> = {
  s3: ["secret_access_key"],
  azure: ["sas_token", "account_key"],
  sftp: ["private_key", "password"],
};

/**
 * Splits one type's fields (the CLI's JSON file, the form) into checked settings and secrets; the
 * first problem is thrown as a sentence (never echoing a secret's value). Unknown fields are refused.
 */
export function parseDestinationFields(type: DestinationType, fields: Record<string, unknown>): DestinationConfig {
  const schemas = SCHEMAS[type];
  const secretNames = SECRET_FIELDS[type];
  const known = new Set([...Object.keys(schemas.config.shape), ...secretNames]);
  const unknown = Object.keys(fields).filter((name) => !known.has(name));
  if (unknown.length > 0) {
    throw new DestinationInputError(
      `${unknown.map((name) => `"${name.slice(0, 40)}"`).join(", ")} is not a setting of a ${type} destination; its settings are ${[...known].join(", ")}.`,
    );
  }
  const secrets = Object.fromEntries(
    Object.entries(fields).filter(([name, value]) => secretNames.includes(name) && value !== undefined && value !== ""),
  );
  const settings = Object.fromEntries(Object.entries(fields).filter(([name]) => !secretNames.includes(name)));
  if (Object.keys(secrets).length > 1) {
    throw new DestinationInputError(`Give only one of ${secretNames.join(" or ")}.`, "secret");
  }
  const config = schemas.config.safeParse(settings);
  if (!config.success) {
    const issue = config.error.issues[0]!;
    throw new DestinationInputError(issue.message, typeof issue.path[0] === "string" ? issue.path[0] : undefined);
  }
  const sealed = (schemas.secrets as z.ZodType).safeParse(secrets);
  if (!sealed.success) {
    if (Object.keys(secrets).length !== 1) {
      const names = secretNames.join(" or ");
      throw new DestinationInputError(
        Object.keys(secrets).length === 0 ? `Give the ${names}.` : `Give only one of ${names}.`,
        "secret",
      );
    }
    throw new DestinationInputError(sealed.error.issues[0]!.message, "secret");
  }
  return { type, config: config.data, secrets: sealed.data } as DestinationConfig;
}

/** A problem with a destination's settings; `field` names the setting it is about, when one is. */
export class DestinationInputError extends Error {
  constructor(
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

/** The orders setting: "all", or order ids separated by commas. */
export const ordersSchema = z.union([
  z.literal("all"),
  z
    .array(z.string().regex(/^ord_[0-9a-f]{32}$/, "An order id looks like ord_ and 32 hex characters."))
    .min(1, "Choose at least one order, or all orders.")
    .max(1000, "Choose at most 1,000 orders, or all orders."),
]);

export const keyTemplateSchema = z
  .string()
  .trim()
  .optional()
  .transform((value) => value || DEFAULT_KEY_TEMPLATE)
  .superRefine((value, context) => {
    const problem = keyTemplateProblem(value);
    if (problem) context.addIssue({ code: "custom", message: problem });
  });

export const exportFormatSchema = z.enum(EXPORT_FORMATS, {
  error: `The format is one of ${EXPORT_FORMATS.join(", ")}.`,
});

/** none: every run goes out; on_warning: the run of a table version whose quality is not passed waits for the buyer (Part 6). */
export const EXPORT_APPROVALS = ["none", "on_warning"] as const;
export type ExportApproval = (typeof EXPORT_APPROVALS)[number];

export const exportApprovalSchema = z.enum(EXPORT_APPROVALS, {
  error: `The approval is one of ${EXPORT_APPROVALS.join(", ")}.`,
});

export const destinationNameSchema = plain("The name", DESTINATION_NAME_MAX);
