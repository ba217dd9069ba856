export {
  apiBase,
  createClient,
  DEFAULT_RENDITION_WAIT_MS,
  type ClientOptions,
  type DatasetAccessClient,
  type FileDownload,
  type Order,
  type OrderFile,
} from "./client.js";
export { downloadVerified, isVerified, type DownloadResult, type ExpectedFile } from "./download.js";
export {
  DatasetAccessError,
  NetworkError,
  NoRenditionError,
  RenditionPendingError,
  UnsafeResponseError,
  VerificationError,
} from "./errors.js";
export { RENDITION_FORMATS, renditionName, type RenditionFormat } from "./formats.js";
export type { WaitReason } from "./http.js";
export {
  MANIFEST_NAME,
  sync,
  type Manifest,
  type NoRendition,
  type RefundedOrder,
  type Refusal,
  type SyncOptions,
  type SyncReport,
} from "./sync.js";
export type { components, paths } from "./generated/api.js";
