-- CreateEnum
CREATE TYPE "security_event_kind" AS ENUM ('sign_in', 'sign_in_link_refused', 'key_created', 'key_replaced', 'key_revoked', 'key_expired', 'share_created', 'share_revoked', 'share_opened');

-- CreateTable
CREATE TABLE "security_events" (
    "id" TEXT NOT NULL DEFAULT typed_id('sev'::text),
    "buyer_id" TEXT NOT NULL,
    "kind" "security_event_kind" NOT NULL,
    "actor" TEXT NOT NULL,
    "ip" TEXT,
    "subject_id" TEXT,
    "detail" TEXT NOT NULL,
    "count" INTEGER NOT NULL DEFAULT 1,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "security_events_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "security_events_buyer_id_created_at_idx" ON "security_events"("buyer_id", "created_at" DESC);

-- AddForeignKey
ALTER TABLE "security_events" ADD CONSTRAINT "security_events_buyer_id_fkey" FOREIGN KEY ("buyer_id") REFERENCES "buyers"("id") ON DELETE CASCADE ON UPDATE CASCADE;
