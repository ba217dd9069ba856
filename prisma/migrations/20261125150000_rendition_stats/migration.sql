-- AlterTable
ALTER TABLE "file_renditions" ADD COLUMN "stats" JSONB;
