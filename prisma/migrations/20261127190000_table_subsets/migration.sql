-- CreateTable
CREATE TABLE "table_subsets" (
    "id" TEXT NOT NULL DEFAULT typed_id('sub'::text),
    "order_id" TEXT NOT NULL,
    "table_id" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "columns" TEXT[] NOT NULL,
    "where" TEXT,
    "format" "rendition_format" NOT NULL,
    "request_key" CHAR(64) NOT NULL,
    "status" "rendition_status" NOT NULL DEFAULT 'pending',
    "storage_key" TEXT,
    "size" BIGINT,
    "sha256" CHAR(64),
    "rows" BIGINT,
    "error_code" TEXT,
    "error" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "table_subsets_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "table_subsets_order_id_request_key_idx" ON "table_subsets"("order_id", "request_key");

-- CreateIndex
CREATE INDEX "table_subsets_expires_at_idx" ON "table_subsets"("expires_at");

-- CreateIndex
CREATE INDEX "table_subsets_table_id_idx" ON "table_subsets"("table_id");

-- AddForeignKey
ALTER TABLE "table_subsets" ADD CONSTRAINT "table_subsets_order_id_fkey" FOREIGN KEY ("order_id") REFERENCES "orders"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "table_subsets" ADD CONSTRAINT "table_subsets_table_id_fkey" FOREIGN KEY ("table_id") REFERENCES "order_tables"("id") ON DELETE CASCADE ON UPDATE CASCADE;
