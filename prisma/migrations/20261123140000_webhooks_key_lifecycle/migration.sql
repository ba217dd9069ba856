-- AlterEnum
ALTER TYPE "security_event_kind" ADD VALUE 'webhook_created';
ALTER TYPE "security_event_kind" ADD VALUE 'webhook_changed';
ALTER TYPE "security_event_kind" ADD VALUE 'webhook_deleted';

-- CreateEnum
CREATE TYPE "webhook_message_status" AS ENUM ('pending', 'delivered', 'failed');

-- AlterTable
ALTER TABLE "api_keys" ADD COLUMN     "retires_at" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "webhook_endpoints" (
    "id" TEXT NOT NULL DEFAULT typed_id('whe'::text),
    "buyer_id" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "events" TEXT[] NOT NULL,
    "secret_sealed" TEXT NOT NULL,
    "secret_hint" TEXT NOT NULL,
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "disabled_reason" TEXT,
    "failing_since" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "webhook_endpoints_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "webhook_messages" (
    "id" TEXT NOT NULL DEFAULT typed_id('msg'::text),
    "endpoint_id" TEXT NOT NULL,
    "event_type" TEXT NOT NULL,
    "payload" TEXT NOT NULL,
    "status" "webhook_message_status" NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMPTZ(3),
    "lease_until" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "delivered_at" TIMESTAMPTZ(3),

    CONSTRAINT "webhook_messages_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "webhook_attempts" (
    "id" TEXT NOT NULL DEFAULT typed_id('wha'::text),
    "message_id" TEXT NOT NULL,
    "attempted_at" TIMESTAMPTZ(3) NOT NULL,
    "status_code" INTEGER,
    "error" TEXT,
    "duration_ms" INTEGER NOT NULL,
    "response_excerpt" TEXT,

    CONSTRAINT "webhook_attempts_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "key_reminders" (
    "key_id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "sent_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "key_reminders_pkey" PRIMARY KEY ("key_id","kind")
);

-- CreateIndex
CREATE INDEX "webhook_endpoints_buyer_id_created_at_idx" ON "webhook_endpoints"("buyer_id", "created_at");

-- CreateIndex
CREATE INDEX "webhook_messages_endpoint_id_created_at_idx" ON "webhook_messages"("endpoint_id", "created_at" DESC);

-- CreateIndex
CREATE INDEX "webhook_attempts_message_id_attempted_at_idx" ON "webhook_attempts"("message_id", "attempted_at");

-- AddForeignKey
ALTER TABLE "webhook_endpoints" ADD CONSTRAINT "webhook_endpoints_buyer_id_fkey" FOREIGN KEY ("buyer_id") REFERENCES "buyers"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhook_messages" ADD CONSTRAINT "webhook_messages_endpoint_id_fkey" FOREIGN KEY ("endpoint_id") REFERENCES "webhook_endpoints"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhook_attempts" ADD CONSTRAINT "webhook_attempts_message_id_fkey" FOREIGN KEY ("message_id") REFERENCES "webhook_messages"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "key_reminders" ADD CONSTRAINT "key_reminders_key_id_fkey" FOREIGN KEY ("key_id") REFERENCES "api_keys"("id") ON DELETE CASCADE ON UPDATE CASCADE;
