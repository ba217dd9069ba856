-- CreateTable
CREATE TABLE "query_history" (
    "id" TEXT NOT NULL DEFAULT typed_id('qry'::text),
    "seq" BIGSERIAL NOT NULL,
    "buyer_id" TEXT NOT NULL,
    "order_id" TEXT NOT NULL,
    "sql" TEXT NOT NULL,
    "ran_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "rows" INTEGER,
    "error" TEXT,

    CONSTRAINT "query_history_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "query_history_buyer_id_seq_idx" ON "query_history"("buyer_id", "seq" DESC);

-- CreateIndex
CREATE INDEX "query_history_order_id_idx" ON "query_history"("order_id");

-- AddForeignKey
ALTER TABLE "query_history" ADD CONSTRAINT "query_history_buyer_id_fkey" FOREIGN KEY ("buyer_id") REFERENCES "buyers"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "query_history" ADD CONSTRAINT "query_history_order_id_fkey" FOREIGN KEY ("order_id") REFERENCES "orders"("id") ON DELETE CASCADE ON UPDATE CASCADE;
