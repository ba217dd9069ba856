import type { ApiKeyPermission as StoredPermission } from "../db/generated/enums";

export const API_KEY_PERMISSIONS = ["datasets:read", "scrape:read"] as const;
export type ApiKeyPermission = (typeof API_KEY_PERMISSIONS)[number];

/** The database enum spells the permissions with underscores; the API and the dashboard with colons. */
export const permissionToStored: Record<ApiKeyPermission, StoredPermission> = {
  "datasets:read": "datasets_read",
  "scrape:read": "scrape_read",
};
export const permissionFromStored: Record<StoredPermission, ApiKeyPermission> = {
  datasets_read: "datasets:read",
  scrape_read: "scrape:read",
};

/**
 * What a key of each permission opens, in the words the key dialog and the API reference show buyers: written
 * once, so neither lags behind what the product does.
 */
export const PERMISSION_SUMMARIES: Record<ApiKeyPermission, string> = {
  "datasets:read":
    "orders and their files, tables with their versions, quality reports and change files, rows filtered with where, " +
    "SQL, subsets as files, Delta Sharing and MCP",
  "scrape:read": "Social API profiles",
};
