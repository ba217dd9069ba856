import { createHash, randomBytes } from "node:crypto";
import { db, Prisma } from "../db/client";
import { AppError } from "../errors";
import { isTypedId } from "../ids";
import { recordSecurityEvent, type Actor } from "../security/log";
import {
  DestinationInputError,
  destinationNameSchema,
  exportApprovalSchema,
  exportFormatSchema,
  keyTemplateSchema,
  ordersSchema,
  parseDestinationFields,
  SECRET_FIELDS,
  type DestinationConfig,
  type DestinationType,
  type ExportApproval,
  type ExportFormat,
} from "./config";
import { describeFailure } from "./failures";
import { secretAddress, secretBinding, SECRET_NEEDED_AGAIN } from "./secret-address";
import { openSecrets, resealSecrets, sealSecrets } from "./secrets";
import { openTarget } from "./targets";
import { TEST_OBJECT_NAME } from "./targets/target";

/**
 * A buyer's export destinations: what the dashboard's Exports page and the operator's
 * `export:destination` / `export:test` do. Every query is scoped to the buyer (the operator's
 * reads name the destination by id). Creating, changing, testing and deleting one go into the
 * buyer's security log. Secrets are sealed on the way in and never returned.
 */

export const MAX_DESTINATIONS_PER_ACCOUNT = 10;

export type DestinationInput = {
  name: string;
  type: DestinationType;
  /** The type's settings and secrets with the contract's field names (a secret left out keeps the current one on change). */
  fields: Record<string, unknown>;
  orders?: "all" | string[];
  format?: ExportFormat;
  template?: string;
  /** Whether a table version with quality warnings waits for the buyer's approval; none when not given. */
  approval?: ExportApproval;
};

export type DestinationSettings = {
  name: string;
  type: DestinationType;
  config: Record<string, unknown>;
  allOrders: boolean;
  orderIds: string[];
  format: ExportFormat;
  keyTemplate: string;
  approval: ExportApproval;
};

/** Checks the whole input; the first problem is an invalid_argument AppError with a sentence. */
async function checkedInput(
  buyerId: string,
  input: DestinationInput,
  keptSecrets?: Record<string, string>,
): Promise<{ settings: DestinationSettings; destination: DestinationConfig }> {
  try {
    const name = settingOf("name", () => destinationNameSchema.parse(input.name));
    const given = withoutEmptySecrets(input.type, input.fields);
    // A secret given replaces the stored ones (it may be of the other kind: a SAS token for an account key).
    const givesSecret = SECRET_FIELDS[input.type].some((name) => name in given);
    const fields = { ...(givesSecret ? {} : (keptSecrets ?? {})), ...given };
    const destination = parseDestinationFields(input.type, fields);
    const orders = settingOf("orders", () => ordersSchema.parse(input.orders ?? "all"));
    const format = settingOf("format", () => exportFormatSchema.parse(input.format ?? "original"));
    const keyTemplate = settingOf("template", () => keyTemplateSchema.parse(input.template));
    const approval = settingOf("approval", () => exportApprovalSchema.parse(input.approval ?? "none"));
    if (orders !== "all") {
      const owned = await db().order.count({ where: { buyerId, id: { in: orders } } });
      if (owned !== new Set(orders).size) {
        throw new DestinationInputError("One of the chosen orders is not an order of this account.", "orders");
      }
    }
    return {
      destination,
      settings: {
        name,
        type: input.type,
        config: destination.config,
        allOrders: orders === "all",
        orderIds: orders === "all" ? [] : [...new Set(orders)],
        format,
        keyTemplate,
        approval,
      },
    };
  } catch (error) {
    if (error instanceof DestinationInputError) throw new SettingError(error.message, error.field);
    if (error instanceof Error && "issues" in error) {
      throw new AppError("invalid_argument", (error as { issues: { message: string }[] }).issues[0]!.message);
    }
    throw error;
  }
}

/**
 * An invalid_argument naming the setting it is about (`field`: the form's field name), so the
 * dashboard's form can show it by that field. (Check for it by `field`, not instanceof: AppError's
 * instanceof matches every AppError.)
 */
class SettingError extends AppError {
  constructor(
    message: string,
    readonly field: string | undefined,
  ) {
    super("invalid_argument", message);
  }
}

/** `parse`, its zod refusal naming `field`. */
function settingOf<Value>(field: string, parse: () => Value): Value {
  try {
    return parse();
  } catch (error) {
    if (error instanceof Error && "issues" in error) {
      throw new DestinationInputError((error as { issues: { message: string }[] }).issues[0]!.message, field);
    }
    throw error;
  }
}

/** A secret field the form left empty means "keep the current one" on change, "missing" on creation. */
function withoutEmptySecrets(type: DestinationType, fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(fields).filter(
      ([name, value]) => !SECRET_FIELDS[type].includes(name) || (value !== undefined && value !== ""),
    ),
  );
}

const rowSettings = (settings: DestinationSettings) => ({
  name: settings.name,
  type: settings.type,
  config: settings.config as Prisma.InputJsonValue,
  allOrders: settings.allOrders,
  orderIds: settings.orderIds,
  format: settings.format === "original" ? null : settings.format,
  keyTemplate: settings.keyTemplate,
  approval: settings.approval,
});

/**
 * Adds a destination; its secrets are sealed bound to it (production refuses without
 * EXPORT_SECRETS_KEY). The limit is counted and the row added in one transaction holding the
 * buyer's row lock, so concurrent creations wait for each other and never exceed it.
 */
export async function createDestination(buyerId: string, input: DestinationInput, by: Actor): Promise<{ id: string }> {
  const { settings, destination } = await checkedInput(buyerId, input);
  // The id is made here, not by the database: the sealed secrets are bound to it.
  const id = `exd_${randomBytes(16).toString("hex")}`;
  const secretsSealed = sealSecrets(destination.secrets, secretBinding(id, destination));
  const created = await db().$transaction(
    async (transaction) => {
      await transaction.$queryRaw`SELECT 1 FROM buyers WHERE id = ${buyerId} FOR NO KEY UPDATE`;
      const count = await transaction.exportDestination.count({ where: { buyerId } });
      if (count >= MAX_DESTINATIONS_PER_ACCOUNT) {
        throw new AppError(
          "invalid_argument",
          `An account has at most ${MAX_DESTINATIONS_PER_ACCOUNT} export destinations.`,
        );
      }
      return transaction.exportDestination.create({
        data: { id, buyerId, ...rowSettings(settings), secretsSealed },
        select: { id: true },
      });
    },
    // Waiting for the buyer's other creations is bounded by the statement timeout, not Prisma's 5 s.
    { maxWait: 10_000, timeout: 60_000 },
  );
  await recordSecurityEvent(buyerId, "export_destination_created", by, {
    id: created.id,
    detail: `${settings.name} (${describePlace(destination)})`,
  });
  return created;
}

/**
 * Changes a destination's settings; a secret given replaces the sealed one. A secret left out is
 * kept only while it goes where it went: a change of endpoint, account URL or host (secretAddress)
 * needs the secret again, so whoever holds a session cannot send the buyer's stored credentials
 * to a host of their own.
 */
export async function updateDestination(buyerId: string, destinationId: string, input: DestinationInput, by: Actor) {
  const current = await ownDestination(buyerId, destinationId);
  if (current.type !== input.type) {
    throw new AppError("invalid_argument", "A destination's type cannot change: add a new destination instead.");
  }
  const currentPlace = { type: current.type, config: current.config, secrets: {} } as DestinationConfig;
  const givesSecret = SECRET_FIELDS[input.type].some((name) => name in withoutEmptySecrets(input.type, input.fields));
  const kept = givesSecret ? undefined : openSecrets(current.secretsSealed, secretBinding(current.id, currentPlace));
  const { settings, destination } = await checkedInput(buyerId, input, kept);
  if (!givesSecret && secretAddress(destination) !== secretAddress(currentPlace)) {
    throw new SettingError(SECRET_NEEDED_AGAIN[input.type], "secret");
  }
  await db().exportDestination.update({
    where: { id: current.id },
    data: {
      ...rowSettings(settings),
      secretsSealed: sealSecrets(destination.secrets, secretBinding(current.id, destination)),
    },
  });
  await recordSecurityEvent(buyerId, "export_destination_changed", by, {
    id: current.id,
    detail: `${settings.name} (${describePlace(destination)}): settings changed`,
  });
}

/** Pauses or resumes a destination; resuming clears its failure record. */
export async function setDestinationEnabled(buyerId: string, destinationId: string, enabled: boolean, by: Actor) {
  const current = await ownDestination(buyerId, destinationId);
  await db().exportDestination.update({
    where: { id: current.id },
    data: enabled ? { enabled, pausedReason: null, failingSince: null } : { enabled, pausedReason: "Paused by you." },
  });
  await recordSecurityEvent(buyerId, "export_destination_changed", by, {
    id: current.id,
    detail: `${current.name} ${enabled ? "resumed" : "paused"}`,
  });
}

/** Deletes a destination with its runs (what it exported stays in the buyer's store). */
export async function deleteDestination(buyerId: string, destinationId: string, by: Actor) {
  const current = await ownDestination(buyerId, destinationId);
  await db().exportDestination.delete({ where: { id: current.id } });
  await recordSecurityEvent(buyerId, "export_destination_deleted", by, { id: current.id, detail: current.name });
}

type DestinationRow = Awaited<ReturnType<typeof ownDestination>>;

async function ownDestination(buyerId: string, destinationId: string) {
  const destination = isTypedId("exd", destinationId)
    ? await db().exportDestination.findFirst({ where: { id: destinationId, buyerId } })
    : null;
  if (!destination) throw new AppError("not_found", `No export destination ${destinationId} for this account.`);
  return destination;
}

/** A destination by id for the operator (any buyer's). */
export async function findDestinationForOperator(destinationId: string) {
  const destination = isTypedId("exd", destinationId)
    ? await db().exportDestination.findUnique({ where: { id: destinationId } })
    : null;
  if (!destination) throw new AppError("not_found", `No export destination ${destinationId}.`);
  return destination;
}

/**
 * The destination's type, settings and opened secrets, ready for a store connection. Secrets sealed
 * under an older key of the ring, or before they were bound to their destination, are sealed again
 * under the first key, bound (how a key rotation, and the move to bound secrets, completes).
 */
export async function openDestination(row: {
  id: string;
  type: DestinationType;
  config: Prisma.JsonValue;
  secretsSealed: string;
}): Promise<DestinationConfig> {
  const place = { type: row.type, config: row.config, secrets: {} } as DestinationConfig;
  const secrets = openSecrets(row.secretsSealed, secretBinding(row.id, place));
  const resealed = resealSecrets(row.secretsSealed, secretBinding(row.id, place));
  if (resealed) {
    await db().exportDestination.updateMany({
      where: { id: row.id, secretsSealed: row.secretsSealed },
      data: { secretsSealed: resealed },
    });
  }
  return { type: row.type, config: row.config, secrets } as DestinationConfig;
}

/** Every secret value of a destination (and its access key id), to redact from what a store answers. */
export function secretValues(destination: DestinationConfig): string[] {
  const values = Object.values(destination.secrets as Record<string, string>);
  if (destination.type === "s3") values.push(destination.config.access_key_id);
  if (destination.type === "azure" && "sas_token" in destination.secrets) {
    // A SAS token's signature travels alone in some answers.
    const signature = new URLSearchParams(destination.secrets.sas_token).get("sig");
    if (signature) values.push(signature);
  }
  return values;
}

/** Where a destination writes, in a few words (no secret). */
export function describePlace(destination: DestinationConfig): string {
  switch (destination.type) {
    case "s3":
      return `s3://${destination.config.bucket}/${destination.config.prefix}${destination.config.endpoint ? ` at ${destination.config.endpoint}` : ""}`;
    case "azure":
      return `${destination.config.account_url} container ${destination.config.container}${destination.config.prefix ? `/${destination.config.prefix}` : ""}`;
    case "sftp":
      return `sftp://${destination.config.username}@${destination.config.host}:${destination.config.port}${destination.config.directory.startsWith("/") ? "" : "/"}${destination.config.directory}`;
  }
}

/**
 * "Test connection": writes one small object at the prefix, reads it back, compares it and deletes
 * it, and says in a sentence what the store answered. Recorded in the buyer's security log.
 */
export async function testDestination(row: DestinationRow, by: Actor): Promise<{ ok: boolean; message: string }> {
  const destination = await openDestination(row);
  const target = await openTarget(destination);
  const key = `${TEST_OBJECT_NAME}-${randomBytes(6).toString("hex")}.txt`;
  const bytes = Buffer.from(`Dataset Access connection test of ${row.name}, ${new Date().toISOString()}\n`);
  let outcome: { ok: boolean; message: string };
  let step = "write";
  try {
    const sha256 = createHash("sha256").update(bytes).digest("hex");
    const { verifiedBy } = await target.put(
      key,
      bytes,
      { size: bytes.length, sha256, contentType: "text/plain" },
      AbortSignal.timeout(60_000),
    );
    step = "read back";
    const read = await target.read(key);
    if (!read.equals(bytes))
      throw new Error(`it read back ${read.length} bytes that differ from the ${bytes.length} written`);
    step = "delete";
    await target.delete(key);
    outcome = {
      ok: true,
      message: `Wrote, read back and deleted ${key} in ${target.description}: the store accepted all three (checked by ${verifiedBy}).`,
    };
  } catch (error) {
    outcome = {
      ok: false,
      message: describeFailure(
        error,
        `The ${step} of a test object in ${target.description}`,
        secretValues(destination),
      ),
    };
  } finally {
    await target.close();
  }
  await recordSecurityEvent(row.buyerId, "export_destination_tested", by, {
    id: row.id,
    detail: `${row.name}: ${outcome.ok ? "connection works" : "connection failed"}`,
  });
  return outcome;
}

/** The dashboard's "Test connection" of one of the buyer's destinations. */
export async function testOwnDestination(buyerId: string, destinationId: string, by: Actor) {
  return testDestination(await ownDestination(buyerId, destinationId), by);
}

export type DestinationView = DestinationSettings & {
  id: string;
  place: string;
  enabled: boolean;
  pausedReason: string | null;
  failingSince: Date | null;
  createdAt: Date;
};

/** The buyer's destinations, oldest first: their settings (never their secrets). */
export async function listDestinations(buyerId: string): Promise<DestinationView[]> {
  const rows = await db().exportDestination.findMany({
    where: { buyerId },
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
  });
  return rows.map((row) => ({
    id: row.id,
    name: row.name,
    type: row.type,
    config: row.config as Record<string, unknown>,
    place: describePlace({ type: row.type, config: row.config, secrets: {} } as DestinationConfig),
    allOrders: row.allOrders,
    orderIds: row.orderIds,
    format: row.format ?? "original",
    keyTemplate: row.keyTemplate,
    approval: row.approval,
    enabled: row.enabled,
    pausedReason: row.pausedReason,
    failingSince: row.failingSince,
    createdAt: row.createdAt,
  }));
}

/** The buyer's orders to choose from (a destination's orders, Export now): newest first, at most `limit`. */
export async function orderChoices(buyerId: string, limit = 200) {
  return db().order.findMany({
    where: { buyerId },
    orderBy: [{ paidAt: "desc" }, { id: "desc" }],
    take: limit,
    select: { id: true, name: true, status: true },
  });
}
