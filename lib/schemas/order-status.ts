import { z } from "zod";

/** An order's status. Dependency-free, so the API's schemas can use it without the database client. */
export const ORDER_STATUSES = ["unfinished", "delivered", "refunded"] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];
export const orderStatusSchema = z.enum(ORDER_STATUSES);
