-- CreateEnum
CREATE TYPE "table_mode" AS ENUM ('snapshot', 'append');

-- CreateEnum
CREATE TYPE "publication_status" AS ENUM ('uploading', 'processing', 'ready', 'failed');

-- CreateEnum
CREATE TYPE "file_origin" AS ENUM ('delivered', 'change_feed');

-- DropIndex
DROP INDEX "order_files_order_id_name_key";

-- AlterTable
ALTER TABLE "order_files" ADD COLUMN     "origin" "file_origin" NOT NULL DEFAULT 'delivered',
ADD COLUMN     "publication_id" TEXT,
ADD COLUMN     "registered" BOOLEAN NOT NULL DEFAULT false;

-- CreateTable
CREATE TABLE "order_tables" (
    "id" TEXT NOT NULL DEFAULT typed_id('tbl'::text),
    "order_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "mode" "table_mode" NOT NULL DEFAULT 'snapshot',
    "key" TEXT[] NOT NULL DEFAULT ARRAY[]::TEXT[],
    "current_version" INTEGER,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "order_tables_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "table_publications" (
    "id" TEXT NOT NULL DEFAULT typed_id('pub'::text),
    "table_id" TEXT NOT NULL,
    "status" "publication_status" NOT NULL DEFAULT 'uploading',
    "seq" INTEGER,
    "error" TEXT,
    "version" INTEGER,
    "part_names" TEXT[] NOT NULL DEFAULT ARRAY[]::TEXT[],
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "table_publications_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "table_versions" (
    "table_id" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "publication_id" TEXT NOT NULL,
    "rows" BIGINT NOT NULL,
    "columns" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "changes" JSONB,
    "change_file_id" TEXT,
    "pruned_at" TIMESTAMPTZ(3),

    CONSTRAINT "table_versions_pkey" PRIMARY KEY ("table_id","version")
);

-- CreateIndex
CREATE UNIQUE INDEX "order_tables_order_id_name_key" ON "order_tables"("order_id", "name");

-- CreateIndex
CREATE INDEX "table_publications_table_id_status_idx" ON "table_publications"("table_id", "status");

-- CreateIndex
CREATE UNIQUE INDEX "table_publications_table_id_seq_key" ON "table_publications"("table_id", "seq");

-- CreateIndex
CREATE UNIQUE INDEX "table_versions_publication_id_key" ON "table_versions"("publication_id");

-- CreateIndex
CREATE UNIQUE INDEX "table_versions_change_file_id_key" ON "table_versions"("change_file_id");

-- CreateIndex
CREATE INDEX "order_files_publication_id_idx" ON "order_files"("publication_id");

-- CreateIndex
CREATE UNIQUE INDEX "order_files_order_id_origin_name_key" ON "order_files"("order_id", "origin", "name");

-- AddForeignKey
ALTER TABLE "order_files" ADD CONSTRAINT "order_files_publication_id_fkey" FOREIGN KEY ("publication_id") REFERENCES "table_publications"("id") ON DELETE NO ACTION ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "order_tables" ADD CONSTRAINT "order_tables_order_id_fkey" FOREIGN KEY ("order_id") REFERENCES "orders"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "table_publications" ADD CONSTRAINT "table_publications_table_id_fkey" FOREIGN KEY ("table_id") REFERENCES "order_tables"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "table_versions" ADD CONSTRAINT "table_versions_table_id_fkey" FOREIGN KEY ("table_id") REFERENCES "order_tables"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Objects registered with `order:add-file --from s3://` are the seller's and never deleted by this
-- app. Rows made before the flag existed are told apart by their key: the app's own objects are
-- stored under <order id>/<uuid>.
UPDATE "order_files" SET "registered" = true
    WHERE "storage_key" LIKE 's3://%' AND "storage_key" !~ '/ord_[0-9a-f]{32}/[0-9a-f-]{36}$';

-- Every data file delivered so far becomes version 1 of a snapshot table of its own, named as
-- order:add-file names a new one (lib/tables/names.ts: the name before the first dot, ASCII
-- letters lower-cased, other characters _, t_ before a leading non-letter, cut to 63, _2, _3 ...
-- where taken). A profiled file with its Parquet rendition is that version now; a file whose
-- profile failed is a failed publication (the file stays listed and downloadable); any other is
-- a publication in processing, which the worker's publication sweep carries on.
DO $$
DECLARE
    file RECORD;
    base TEXT;
    candidate TEXT;
    n INTEGER;
    new_table TEXT;
    new_publication TEXT;
    ready BOOLEAN;
BEGIN
    FOR file IN
        SELECT f.id, f.order_id, f.name, f.created_at, f.profile_status, f.profile_error, f.rows, f.columns,
               r.status AS parquet_status, r.updated_at AS parquet_at
        FROM "order_files" f
        LEFT JOIN "file_renditions" r ON r.file_id = f.id AND r.format = 'parquet'
        WHERE f.format <> 'binary'
        ORDER BY f.order_id, f.created_at, f.id
    LOOP
        base := regexp_replace(translate(split_part(file.name, '.', 1), 'ABCDEFGHIJKLMNOPQRSTUVWXYZ',
            'abcdefghijklmnopqrstuvwxyz'), '[^a-z0-9_]', '_', 'g');
        IF base !~ '^[a-z]' THEN base := 't_' || base; END IF;
        base := left(base, 63);
        candidate := base;
        n := 2;
        WHILE EXISTS (SELECT 1 FROM "order_tables" WHERE order_id = file.order_id AND name = candidate) LOOP
            candidate := left(base, 63 - length('_' || n)) || '_' || n;
            n := n + 1;
        END LOOP;
        ready := file.profile_status = 'ready' AND file.parquet_status = 'ready';
        INSERT INTO "order_tables" (order_id, name, mode, key, current_version, created_at)
            VALUES (file.order_id, candidate, 'snapshot', ARRAY[]::TEXT[], CASE WHEN ready THEN 1 END, file.created_at)
            RETURNING id INTO new_table;
        INSERT INTO "table_publications" (table_id, status, seq, error, version, part_names, created_at, finished_at)
            VALUES (
                new_table,
                (CASE WHEN ready THEN 'ready' WHEN file.profile_status = 'failed' THEN 'failed' ELSE 'processing' END)::"publication_status",
                1,
                CASE WHEN file.profile_status = 'failed'
                    THEN 'Part "' || file.name || '" could not be read: ' || coalesce(file.profile_error, 'see its profile.') END,
                CASE WHEN ready THEN 1 END,
                ARRAY[file.name],
                file.created_at,
                CASE WHEN ready THEN file.parquet_at WHEN file.profile_status = 'failed' THEN file.created_at END)
            RETURNING id INTO new_publication;
        UPDATE "order_files" SET publication_id = new_publication WHERE id = file.id;
        IF ready THEN
            INSERT INTO "table_versions" (table_id, version, publication_id, rows, columns, created_at)
                VALUES (new_table, 1, new_publication, coalesce(file.rows, 0), coalesce(file.columns, '[]'::jsonb), file.parquet_at);
        END IF;
    END LOOP;
END $$;
