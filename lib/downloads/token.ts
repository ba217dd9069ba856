import { createHmac, timingSafeEqual } from "node:crypto";
import { DOWNLOAD_LINK_TTL_SECONDS } from "../contract";
import { AppError } from "../errors";
import { appSecret } from "../secrets";

/**
 * Token layout: `base64url(payload) "." base64url(HMAC-SHA256(appSecret, DOMAIN + "." + payload part))`,
 * where payload = version byte (1) | expiry in Unix seconds (uint32 big-endian) | file id (UTF-8).
 * The MAC covers the encoded payload text exactly as sent, so no decoding happens before it is checked,
 * and the domain prefix keeps these MACs from being valid for anything else signed with the same secret.
 */
const VERSION = 1;
const DOMAIN = "download-link:v1";
const HEADER_BYTES = 5;
const MAC_BYTES = 32;
/** Far above any real token; stops oversized input before any work is done on it. */
const MAX_TOKEN_LENGTH = 512;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

export type DownloadToken = { fileId: string; expiresAt: Date };

export function signDownloadToken({ fileId, expiresAt }: DownloadToken): string {
  const expiry = Math.floor(expiresAt.getTime() / 1000);
  if (!fileId) throw new RangeError("A download token needs a file id.");
  if (!Number.isInteger(expiry) || expiry < 0 || expiry > 0xffffffff) {
    throw new RangeError("A download token's expiry must be a valid date between 1970 and 2106.");
  }
  const header = Buffer.alloc(HEADER_BYTES);
  header.writeUInt8(VERSION, 0);
  header.writeUInt32BE(expiry, 1);
  const payload = Buffer.concat([header, Buffer.from(fileId, "utf8")]).toString("base64url");
  return `${payload}.${mac(payload).toString("base64url")}`;
}

/** The file a token grants, if its signature holds and it has not expired; otherwise an AppError. */
export function verifyDownloadToken(token: string, now = new Date()): DownloadToken {
  const parts = token.length <= MAX_TOKEN_LENGTH ? token.split(".") : [];
  const [payload, signature] = parts;
  if (parts.length !== 2 || !payload || !signature || !BASE64URL.test(payload) || !BASE64URL.test(signature)) {
    throw invalid();
  }
  const given = Buffer.from(signature, "base64url");
  // Re-encoding rejects non-canonical spellings of the same MAC, so each link has exactly one valid form.
  if (
    given.length !== MAC_BYTES ||
    given.toString("base64url") !== signature ||
    !timingSafeEqual(given, mac(payload))
  ) {
    throw invalid();
  }

  const bytes = Buffer.from(payload, "base64url");
  if (bytes.length <= HEADER_BYTES || bytes.readUInt8(0) !== VERSION) throw invalid();
  const expiresAt = new Date(bytes.readUInt32BE(1) * 1000);
  const fileId = bytes.subarray(HEADER_BYTES).toString("utf8");
  if (now.getTime() >= expiresAt.getTime()) {
    throw new AppError(
      "download_link_expired",
      `This download link has expired (links are valid for ${DOWNLOAD_LINK_TTL_SECONDS / 60} minutes). Request a new one from the API: GET /api/v1/orders/{id}/files/{fileId}.`,
    );
  }
  return { fileId, expiresAt };
}

function mac(payload: string): Buffer {
  return createHmac("sha256", appSecret()).update(`${DOMAIN}.${payload}`).digest();
}

function invalid(): AppError {
  return new AppError(
    "download_link_invalid",
    "This download link is not valid: it is malformed or has been altered. Request a new one from the API.",
  );
}
