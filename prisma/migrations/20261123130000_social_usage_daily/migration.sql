-- CreateTable
CREATE TABLE "social_usage_daily" (
    "buyer_id" TEXT NOT NULL,
    "day" DATE NOT NULL,
    "used" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "social_usage_daily_pkey" PRIMARY KEY ("buyer_id","day")
);

-- AddForeignKey
ALTER TABLE "social_usage_daily" ADD CONSTRAINT "social_usage_daily_buyer_id_fkey" FOREIGN KEY ("buyer_id") REFERENCES "buyers"("id") ON DELETE CASCADE ON UPDATE CASCADE;
