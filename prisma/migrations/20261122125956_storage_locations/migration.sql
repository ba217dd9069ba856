-- DropIndex
DROP INDEX "order_files_storage_key_key";
