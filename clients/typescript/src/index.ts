export {
  apiBase,
  createClient,
  DEFAULT_RENDITION_WAIT_MS,
  type Changes,
  type ClientOptions,
  type Column,
  type DatasetAccessClient,
  type FileDownload,
  type Order,
  type OrderFile,
  type Table,
  type Version,
} from "./client.js";
export {
  changeFileName,
  changes,
  CHANGES_MANIFEST_NAME,
  type ChangeFileReport,
  type ChangesOptions,
  type ChangesReport,
} from "./changes.js";
export type { DataContract } from "./contract.js";
export {
  rowObjects,
  type ResultColumn,
  type RowsOptions,
  type RowsPage,
  type SqlResult,
  type Value,
} from "./explore.js";
export {
  downloadVerified,
  isVerified,
  type CheckedDownload,
  type DownloadResult,
  type ExpectedFile,
} from "./download.js";
export {
  DatasetAccessError,
  NetworkError,
  NoRenditionError,
  RenditionPendingError,
  UnsafeResponseError,
  VerificationError,
} from "./errors.js";
export {
  formatQualityReport,
  qualityOf,
  type ColumnQuality,
  type Quality,
  type QualityCheck,
  type QualityReport,
} from "./quality.js";
export { RENDITION_FORMATS, renditionName, type RenditionFormat } from "./formats.js";
export type { WaitReason } from "./http.js";
export {
  DEFAULT_SYNC_CONCURRENCY,
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
