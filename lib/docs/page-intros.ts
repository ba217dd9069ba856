import { SECURITY_EVENT_GROUPS } from "../security/log";
import { WEBHOOK_EVENT_GROUPS } from "../webhooks/events";

/**
 * The page intros that list what a page covers, built from the lists themselves (webhook events, security-log
 * kinds), so a new event or kind cannot leave an intro behind (lib/docs/page-intros.test.ts).
 */

/** "a, b and c". */
export function listInWords(items: readonly string[]): string {
  return items.length <= 1 ? (items[0] ?? "") : `${items.slice(0, -1).join(", ")} and ${items.at(-1)}`;
}

/** Webhooks: "We POST an event to your endpoints when an order is delivered or refunded, ..." */
export const WEBHOOKS_INTRO = `We POST an event to your endpoints when ${listInWords(
  WEBHOOK_EVENT_GROUPS.map((group) => group.when),
)}, so your backend need not poll.`;

/** Security log: "Sign-ins, API keys, ... of your account: ..." */
export const SECURITY_LOG_INTRO = `${listInWords(
  // Lower-cased after the first, but not an acronym: "Sign-ins, API keys, share links".
  SECURITY_EVENT_GROUPS.map(({ name }, index) =>
    index === 0 ? name : name.replace(/^[A-Z](?=[a-z])/, (c) => c.toLowerCase()),
  ),
)} of your account: what happened, when, who did it and from which address. Kept one year.`;
