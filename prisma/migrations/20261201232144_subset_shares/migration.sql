-- AlterTable
ALTER TABLE "table_subsets" ADD COLUMN     "last_used_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
ADD COLUMN     "started_at" TIMESTAMPTZ(3);

-- CreateIndex
CREATE INDEX "table_subsets_status_created_at_idx" ON "table_subsets"("status", "created_at");
