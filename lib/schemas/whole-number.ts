import { z } from "zod";

/**
 * A query parameter that is a whole number of at most 9 digits, as text. A negative one is told the
 * rule it breaks (`negative`: "offset must be 0 or more"; a limit passes its range), not that it
 * is no whole number, which -1 is.
 */
export const wholeNumber = (name: string, negative = `${name} must be 0 or more`) =>
  z
    .string()
    .refine((value) => !/^-\d+$/.test(value), negative)
    .regex(/^\d{1,9}$/, `${name} must be a whole number`)
    .transform(Number);
