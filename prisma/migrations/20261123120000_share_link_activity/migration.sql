-- AlterTable
ALTER TABLE "share_links" ADD COLUMN     "label" VARCHAR(100),
ADD COLUMN     "open_count" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "last_opened_at" TIMESTAMPTZ(3),
ADD COLUMN     "download_count" INTEGER NOT NULL DEFAULT 0;
