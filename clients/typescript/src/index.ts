export {
  apiBase,
  createClient,
  type ClientOptions,
  type DatasetAccessClient,
  type Order,
  type OrderFile,
} from "./client.js";
export { downloadVerified, isVerified, type DownloadResult, type ExpectedFile } from "./download.js";
export { DatasetAccessError, NetworkError, VerificationError } from "./errors.js";
export { MANIFEST_NAME, sync, type Manifest, type SyncOptions, type SyncReport } from "./sync.js";
export type { components, paths } from "./generated/api.js";
