import { revalidatePath } from "next/cache";
import type { z } from "zod";
import { AppError } from "../errors";
import { currentBuyer } from "./session";

/** What a dashboard server action answers: its result, or an error for the person who clicked. */
/** A refusal may name the form field it is about (`field`), for the form to show it there. */
export type ActionResult<Value = object> = ({ ok: true } & Value) | { ok: false; error: string; field?: string };

/**
 * A dashboard server action. An action is a public POST endpoint taking whatever the client sends
 * (hence `input: unknown`), so this checks the session itself, validates the input with `schema` (the first problem's message is the answer) and turns
 * an AppError into a message; then it refreshes `revalidate(input)`. Next.js refuses actions whose
 * Origin is not this site (the CSRF protection), and the session cookie is SameSite=Lax as well.
 */
export function buyerAction<Schema extends z.ZodType, Value>(
  schema: Schema,
  run: (buyerId: string, input: z.output<Schema>) => Promise<ActionResult<Value>>,
  { revalidate }: { revalidate: (input: z.output<Schema>) => string },
): (input: unknown) => Promise<ActionResult<Value>> {
  return async (input) => {
    const buyer = await currentBuyer();
    if (!buyer) return { ok: false, error: "Your session has ended. Sign in again." };
    const parsed = schema.safeParse(input);
    if (!parsed.success) return { ok: false, error: parsed.error.issues[0]?.message ?? "That request was not valid." };
    try {
      const result = await run(buyer.id, parsed.data);
      revalidatePath(revalidate(parsed.data));
      return result;
    } catch (error) {
      if (error instanceof AppError) {
        const field = (error as { field?: unknown }).field;
        return { ok: false, error: error.message, ...(typeof field === "string" ? { field } : {}) };
      }
      throw error;
    }
  };
}
