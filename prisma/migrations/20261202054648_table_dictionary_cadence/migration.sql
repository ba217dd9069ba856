-- AlterTable
ALTER TABLE "order_tables" ADD COLUMN     "cadence_seconds" INTEGER,
ADD COLUMN     "column_docs" JSONB NOT NULL DEFAULT '{}',
ADD COLUMN     "description" TEXT,
ADD COLUMN     "grace_seconds" INTEGER,
ADD COLUMN     "late_notice_for" TIMESTAMPTZ(3);
