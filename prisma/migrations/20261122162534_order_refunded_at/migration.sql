-- AlterTable
ALTER TABLE "orders" ADD COLUMN     "refunded_at" TIMESTAMPTZ(3);
