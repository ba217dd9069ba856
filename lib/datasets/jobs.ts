import { logger } from "../log";
import { RENDITION_FORMATS, type RenditionFormat } from "../data-formats";
import { profileStoredFile } from "./profile";
import { makeRendition } from "./renditions";

/** The worker's handlers of the dataset queues (lib/jobs/registry.ts). */

export async function handleProfileJob(data: Record<string, unknown>): Promise<void> {
  if (typeof data.fileId !== "string") return;
  const outcome = await profileStoredFile(data.fileId, { pendingOnly: true });
  logger().info({ fileId: data.fileId, outcome }, "file profile");
}

export async function handleRenditionJob(data: Record<string, unknown>): Promise<void> {
  const { fileId, format } = data;
  if (typeof fileId !== "string" || !RENDITION_FORMATS.includes(format as RenditionFormat)) return;
  const outcome = await makeRendition(fileId, format as RenditionFormat);
  logger().info({ fileId, format, outcome }, "file rendition");
}
