-- CreateEnum
CREATE TYPE "table_notice_type" AS ENUM ('schema_change', 'delay', 'deprecation');

-- CreateEnum
CREATE TYPE "export_approval" AS ENUM ('none', 'on_warning');

-- AlterEnum
ALTER TYPE "publication_status" ADD VALUE 'held';

-- AlterEnum
-- This migration adds more than one value to an enum.
-- With PostgreSQL versions 11 and earlier, this is not possible
-- in a single migration. This can be worked around by creating
-- multiple migrations, each migration adding only one value to
-- the enum.


ALTER TYPE "export_run_state" ADD VALUE 'awaiting_approval';
ALTER TYPE "export_run_state" ADD VALUE 'skipped';

-- AlterTable
ALTER TABLE "order_tables" ADD COLUMN     "checks" JSONB NOT NULL DEFAULT '{}';

-- AlterTable
ALTER TABLE "table_publications" ADD COLUMN     "figures" JSONB,
ADD COLUMN     "reason" TEXT,
ADD COLUMN     "report" JSONB;

-- AlterTable
ALTER TABLE "table_versions" ADD COLUMN     "figures" JSONB,
ADD COLUMN     "quality" JSONB;

-- AlterTable
ALTER TABLE "export_destinations" ADD COLUMN     "approval" "export_approval" NOT NULL DEFAULT 'none';

-- CreateTable
CREATE TABLE "table_notices" (
    "id" TEXT NOT NULL DEFAULT typed_id('tnt'::text),
    "table_id" TEXT NOT NULL,
    "type" "table_notice_type" NOT NULL,
    "message" TEXT NOT NULL,
    "effective_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "table_notices_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "table_notices_table_id_created_at_idx" ON "table_notices"("table_id", "created_at" DESC);

-- AddForeignKey
ALTER TABLE "table_notices" ADD CONSTRAINT "table_notices_table_id_fkey" FOREIGN KEY ("table_id") REFERENCES "order_tables"("id") ON DELETE CASCADE ON UPDATE CASCADE;
