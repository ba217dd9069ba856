-- CreateEnum
CREATE TYPE "export_destination_type" AS ENUM ('s3', 'azure', 'sftp');

-- CreateEnum
CREATE TYPE "export_run_state" AS ENUM ('pending', 'running', 'completed', 'failed');

-- CreateEnum
CREATE TYPE "export_trigger" AS ENUM ('order.delivered', 'table.updated', 'manual');

-- AlterEnum
-- This migration adds more than one value to an enum.
-- With PostgreSQL versions 11 and earlier, this is not possible
-- in a single migration. This can be worked around by creating
-- multiple migrations, each migration adding only one value to
-- the enum.


ALTER TYPE "security_event_kind" ADD VALUE 'export_destination_created';
ALTER TYPE "security_event_kind" ADD VALUE 'export_destination_changed';
ALTER TYPE "security_event_kind" ADD VALUE 'export_destination_tested';
ALTER TYPE "security_event_kind" ADD VALUE 'export_destination_deleted';

-- CreateTable
CREATE TABLE "export_destinations" (
    "id" TEXT NOT NULL DEFAULT typed_id('exd'::text),
    "buyer_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "type" "export_destination_type" NOT NULL,
    "config" JSONB NOT NULL,
    "secrets_sealed" TEXT NOT NULL,
    "all_orders" BOOLEAN NOT NULL DEFAULT true,
    "order_ids" TEXT[] NOT NULL,
    "format" "rendition_format",
    "key_template" TEXT NOT NULL,
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "paused_reason" TEXT,
    "failing_since" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "export_destinations_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "export_runs" (
    "id" TEXT NOT NULL DEFAULT typed_id('exr'::text),
    "buyer_id" TEXT NOT NULL,
    "destination_id" TEXT NOT NULL,
    "order_id" TEXT NOT NULL,
    "trigger" "export_trigger" NOT NULL,
    "trigger_key" TEXT NOT NULL,
    "table_name" TEXT,
    "table_version" INTEGER,
    "state" "export_run_state" NOT NULL DEFAULT 'pending',
    "files" INTEGER NOT NULL DEFAULT 0,
    "bytes" BIGINT NOT NULL DEFAULT 0,
    "skipped" INTEGER NOT NULL DEFAULT 0,
    "manifest_key" TEXT,
    "manifest" JSONB,
    "error" TEXT,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMPTZ(3),
    "lease_until" TIMESTAMPTZ(3),
    "lease_token" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(3),
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "export_runs_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "export_destinations_buyer_id_created_at_idx" ON "export_destinations"("buyer_id", "created_at");

-- CreateIndex
CREATE INDEX "export_runs_buyer_id_created_at_id_idx" ON "export_runs"("buyer_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "export_runs_destination_id_created_at_idx" ON "export_runs"("destination_id", "created_at" DESC);

-- CreateIndex
CREATE INDEX "export_runs_order_id_idx" ON "export_runs"("order_id");

-- CreateIndex
CREATE UNIQUE INDEX "export_runs_destination_id_trigger_key_key" ON "export_runs"("destination_id", "trigger_key");

-- AddForeignKey
ALTER TABLE "export_destinations" ADD CONSTRAINT "export_destinations_buyer_id_fkey" FOREIGN KEY ("buyer_id") REFERENCES "buyers"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "export_runs" ADD CONSTRAINT "export_runs_buyer_id_fkey" FOREIGN KEY ("buyer_id") REFERENCES "buyers"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "export_runs" ADD CONSTRAINT "export_runs_destination_id_fkey" FOREIGN KEY ("destination_id") REFERENCES "export_destinations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "export_runs" ADD CONSTRAINT "export_runs_order_id_fkey" FOREIGN KEY ("order_id") REFERENCES "orders"("id") ON DELETE CASCADE ON UPDATE CASCADE;
