import type { DestinationConfig, DestinationType } from "./config";

export type { DestinationType };

/**
 * Where a destination's secret, or what is signed with it, is sent: the S3 endpoint (with the
 * bucket when it is part of the host name), the Azure account URL (a SAS token travels in every
 * URL), the SFTP host, port and host key (a password is typed to whichever server holds that key).
 * AWS itself (no endpoint) is one place whatever the bucket or region. A change of this needs the
 * secret again, and sealed secrets are bound to it.
 */
export function secretAddress(destination: DestinationConfig): string {
  switch (destination.type) {
    case "s3": {
      const { endpoint, force_path_style, bucket } = destination.config;
      if (!endpoint) return "s3 AWS";
      return force_path_style ? `s3 ${endpoint}` : `s3 ${endpoint} bucket ${bucket}`;
    }
    case "azure":
      return `azure ${destination.config.account_url}`;
    case "sftp":
      return `sftp ${destination.config.host}:${destination.config.port} ${destination.config.host_key_sha256}`;
  }
}

/** What sealed secrets are bound to (AES-GCM additional data): the destination's id and secretAddress. */
export function secretBinding(destinationId: string, destination: DestinationConfig): string {
  return `${destinationId}\n${secretAddress(destination)}`;
}

/** The refusal of a changed address without the secret, in the words of each type's form. */
export const SECRET_NEEDED_AGAIN: Record<DestinationType, string> = {
  s3: "The endpoint (or the bucket in its host name) changed: enter the secret access key again, as it would be sent there.",
  azure: "The account URL changed: enter the SAS token or account key again, as it would be sent there.",
  sftp: "The host, port or host key changed: enter the password or private key again, as it would be sent there.",
};

/** The edit form's hint under the secret (this module has no server code: the form imports it). */
export const KEEP_SECRET_HINT: Record<DestinationType, string> = {
  s3: "Leave it empty to keep the stored one, unless the endpoint changes. ",
  azure: "Leave it empty to keep the stored one, unless the account URL changes. ",
  sftp: "Leave it empty to keep the stored one, unless the host, port or host key changes. ",
};
