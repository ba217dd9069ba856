/**
 * The Delta Sharing profile file a buyer downloads when a `datasets:read` key is created: what
 * pandas, Spark and Power BI read to find the server and authenticate (Part 3 of the contract).
 * Pure: the keys page builds it in the browser, where the secret already is.
 */

/** Where the Delta Sharing server answers, below the site's origin. */
export const SHARING_PATH = "/api/delta-sharing";

/** The name the profile is saved under; the clients' examples use it. */
export const SHARING_PROFILE_FILE_NAME = "dataset-access.share";

export type SharingProfile = {
  shareCredentialsVersion: 1;
  endpoint: string;
  bearerToken: string;
  expirationTime: string;
};

export function sharingProfile(origin: string, secret: string, expiresAt: Date | string): SharingProfile {
  return {
    shareCredentialsVersion: 1,
    endpoint: `${origin.replace(/\/+$/, "")}${SHARING_PATH}`,
    bearerToken: secret,
    expirationTime: new Date(expiresAt).toISOString(),
  };
}
