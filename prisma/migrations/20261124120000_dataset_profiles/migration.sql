-- CreateEnum
CREATE TYPE "file_format" AS ENUM ('csv', 'tsv', 'json', 'jsonl', 'parquet', 'binary');

-- CreateEnum
CREATE TYPE "profile_status" AS ENUM ('pending', 'ready', 'failed', 'none');

-- CreateEnum
CREATE TYPE "rendition_format" AS ENUM ('parquet', 'csv', 'jsonl');

-- CreateEnum
CREATE TYPE "rendition_status" AS ENUM ('pending', 'ready', 'failed');

-- AlterTable
ALTER TABLE "order_files" ADD COLUMN     "columns" JSONB,
ADD COLUMN     "compression" TEXT,
ADD COLUMN     "format" "file_format" NOT NULL DEFAULT 'binary',
ADD COLUMN     "preview" JSONB,
ADD COLUMN     "profile_error" TEXT,
ADD COLUMN     "profile_status" "profile_status" NOT NULL DEFAULT 'none',
ADD COLUMN     "profiled_at" TIMESTAMPTZ(3),
ADD COLUMN     "rows" BIGINT;

-- CreateTable
CREATE TABLE "file_renditions" (
    "file_id" TEXT NOT NULL,
    "format" "rendition_format" NOT NULL,
    "status" "rendition_status" NOT NULL DEFAULT 'pending',
    "storage_key" TEXT,
    "size" BIGINT,
    "sha256" CHAR(64),
    "error" TEXT,
    "version" INTEGER NOT NULL DEFAULT 1,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "file_renditions_pkey" PRIMARY KEY ("file_id","format")
);

-- AddForeignKey
ALTER TABLE "file_renditions" ADD CONSTRAINT "file_renditions_file_id_fkey" FOREIGN KEY ("file_id") REFERENCES "order_files"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Files added before profiles existed: their format from the name (as lib/datasets/formats.ts
-- reads it) and a profile to make: `npm run admin -- files:profile --all`.
UPDATE "order_files" SET "format" = (CASE
    WHEN lower("name") ~ '\.csv(\.gz)?$' THEN 'csv'
    WHEN lower("name") ~ '\.(tsv|tab)(\.gz)?$' THEN 'tsv'
    WHEN lower("name") ~ '\.(jsonl|ndjson)(\.gz)?$' THEN 'jsonl'
    WHEN lower("name") ~ '\.json(\.gz)?$' THEN 'json'
    WHEN lower("name") ~ '\.parquet$' THEN 'parquet'
    ELSE 'binary' END)::"file_format";
UPDATE "order_files" SET "compression" = 'gzip', "profile_status" = 'pending'
    WHERE "format" <> 'binary' AND lower("name") ~ '\.gz$';
UPDATE "order_files" SET "profile_status" = 'pending' WHERE "format" <> 'binary';
