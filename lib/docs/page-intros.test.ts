import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { listInWords, SECURITY_LOG_INTRO, WEBHOOKS_INTRO } from "./page-intros";
import { SECURITY_EVENT_GROUPS, SECURITY_EVENT_KINDS } from "../security/log";
import { WEBHOOK_EVENT_GROUPS, WEBHOOK_EVENT_TYPES } from "../webhooks/events";

// Issue #39: the Webhooks intro named three events of the seven offered; the Security log's named three areas of five.
describe("the page intros keep in step with what the pages list", () => {
  it("names every event the Webhooks form offers, each once", () => {
    const offered = WEBHOOK_EVENT_TYPES.filter((type) => type !== "webhook.test");
    expect(WEBHOOK_EVENT_GROUPS.flatMap((group) => group.events).sort()).toEqual([...offered].sort());
    for (const { when } of WEBHOOK_EVENT_GROUPS) expect(WEBHOOKS_INTRO).toContain(when);
    expect(WEBHOOKS_INTRO).toBe(
      "We POST an event to your endpoints when an order is delivered or refunded, a table gets a new version, a notice " +
        "about a table is posted, an API key is about to expire or has expired and an export run completes or fails, " +
        "so your backend need not poll.",
    );
  });

  it("names every kind of event the Security log records, each in one group", () => {
    expect(SECURITY_EVENT_GROUPS.flatMap((group) => group.kinds).sort()).toEqual([...SECURITY_EVENT_KINDS].sort());
    expect(SECURITY_LOG_INTRO).toMatch(
      /^Sign-ins, API keys, share links, webhook endpoints and export destinations of your account: /,
    );
  });

  it.each([
    ["app/(dashboard)/webhooks/page.tsx", "WEBHOOKS_INTRO"],
    ["app/(dashboard)/security/page.tsx", "SECURITY_LOG_INTRO"],
  ])("%s shows %s", (file, intro) => {
    expect(readFileSync(file, "utf8")).toContain(`{${intro}}`);
  });

  it("lists in words", () => {
    expect([[], ["a"], ["a", "b"], ["a", "b", "c"]].map(listInWords)).toEqual(["", "a", "a and b", "a, b and c"]);
  });
});
