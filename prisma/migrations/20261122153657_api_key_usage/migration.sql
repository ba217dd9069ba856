-- CreateEnum
CREATE TYPE "usage_outcome" AS ENUM ('2xx', '4xx', '429', '5xx');

-- CreateTable
CREATE TABLE "api_key_usage" (
    "key_id" TEXT NOT NULL,
    "hour" TIMESTAMPTZ(3) NOT NULL,
    "outcome" "usage_outcome" NOT NULL,
    "count" INTEGER NOT NULL,

    CONSTRAINT "api_key_usage_pkey" PRIMARY KEY ("key_id","hour","outcome")
);

-- CreateIndex
CREATE INDEX "api_key_usage_hour_idx" ON "api_key_usage"("hour");

-- AddForeignKey
ALTER TABLE "api_key_usage" ADD CONSTRAINT "api_key_usage_key_id_fkey" FOREIGN KEY ("key_id") REFERENCES "api_keys"("id") ON DELETE CASCADE ON UPDATE CASCADE;
