import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import { normaliseEmailIdentifier } from "./email-identifier";
import { mailDelivery, signInMail } from "./mail";
import { safeReturnPath } from "./return-to";
import { clientIp } from "../http/client-ip";
import { clientNetwork } from "./signin-limits";

describe("mailDelivery", () => {
  it.each([
    { env: { EMAIL_SERVER: "smtp://mail:587", EMAIL_FROM: "a@b.c" }, production: true, mode: "smtp" },
    { env: { EMAIL_SERVER: "smtp://mail:587" }, production: false, mode: "smtp" },
    { env: {}, production: false, mode: "dev-mailbox" },
    { env: { EMAIL_SERVER: "" }, production: true, mode: "unconfigured" },
  ])("$mode for $env (production: $production)", ({ env, production, mode }) => {
    expect(mailDelivery(env as NodeJS.ProcessEnv, production).mode).toBe(mode);
  });
});

describe("signInMail", () => {
  it("carries the whole link in the text, and escapes it in the HTML", () => {
    const url = "https://data.example.com/signin/confirm?token=abc&email=a%40b.c";
    const mail = signInMail("a@b.c", url, 15);
    expect(mail.text).toContain(`\n${url}\n`);
    expect(mail.text).toContain("expires in 15 minutes");
    expect(mail.html).toContain('href="https://data.example.com/signin/confirm?token=abc&amp;email=a%40b.c"');
  });
});

describe("safeReturnPath", () => {
  it.each([
    ["/keys", "/keys"],
    ["/orders/ord_1?x=1", "/orders/ord_1?x=1"],
    ["https://evil.example/", "/orders"],
    ["//evil.example/", "/orders"],
    ["/\\evil.example", "/orders"],
    ["/\t/evil.example/x", "/orders"],
    ["/\n/evil.example", "/orders"],
    // Dot segments that resolve to a network-path reference (//host) must not leave the site.
    ["/..//evil.example/x", "/orders"],
    ["/.//evil.example", "/orders"],
    ["/%2e%2e//evil.example", "/orders"],
    ["/%2E%2E//evil.example", "/orders"],
    ["/.%2e//evil.example", "/orders"],
    ["/a/../..//evil.example", "/orders"],
    ["/..\\/evil.example", "/orders"],
    ["/../\\evil.example", "/orders"],
    ["/./keys", "/keys"],
    ["/orders/../keys?tab=1#new", "/keys?tab=1#new"],
    ["/..", "/"],
    [undefined, "/orders"],
    [["/keys"], "/orders"],
  ])("%j -> %s", (value, expected) => {
    expect(safeReturnPath(value)).toBe(expected);
  });
});

describe("normaliseEmailIdentifier", () => {
  it.each([
    [" Buyer@Example.COM ", "buyer@example.com"],
    ["ｂuyer@example.com", "buyer@example.com"],
  ])("%j -> %s", (raw, email) => expect(normaliseEmailIdentifier(raw)).toBe(email));
  it.each([
    "victim@example.com,1",
    "a@b@example.com",
    '"a"@example.com',
    "a b@example.com",
    "nobody@localhost",
    "",
    "a\u0000b@example.com",
    "a@exa\u007fmple.com",
  ])("refuses %j", (raw) => expect(() => normaliseEmailIdentifier(raw)).toThrow("Invalid email address format."));
});

describe("clientIp", () => {
  const request = (forwarded?: string) =>
    ({
      headers: forwarded ? { "x-forwarded-for": forwarded } : {},
      socket: { remoteAddress: "10.0.0.1" },
    }) as unknown as IncomingMessage;

  it("is the socket's peer unless a proxy is trusted", () => {
    expect(clientIp(request("1.2.3.4"), {} as NodeJS.ProcessEnv)).toBe("10.0.0.1");
  });
  it("behind a trusted proxy, is the address the proxy appended, not what the client claimed", () => {
    const env = { TRUST_PROXY: "true" } as unknown as NodeJS.ProcessEnv;
    expect(clientIp(request("6.6.6.6, 1.2.3.4"), env)).toBe("1.2.3.4");
    expect(clientIp(request(), env)).toBe("10.0.0.1");
  });
});

describe("clientNetwork", () => {
  it.each([
    ["203.0.113.7", "203.0.113.7"],
    ["::ffff:203.0.113.7", "203.0.113.7"],
    ["::FFFF:203.0.113.7", "203.0.113.7"],
    ["2001:db8:1:2::1", "2001:db8:1:2::/64"],
    ["2001:0DB8:0001:0002:ffff:0:0:1", "2001:db8:1:2::/64"],
    ["2001:db8::1", "2001:db8:0:0::/64"],
    ["2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"],
    ["::1", "0:0:0:0::/64"],
    ["fe80::1%eth0", "fe80:0:0:0::/64"],
    ["::ffff:1.2.3.4.5", "::ffff:1.2.3.4.5"],
    ["unknown", "unknown"],
  ])("%s -> %s", (ip, network) => expect(clientNetwork(ip)).toBe(network));
});
