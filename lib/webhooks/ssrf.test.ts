import net from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { configuredAddressFilter, guardedLookup, isForbiddenAddress, postOnce } from "./ssrf";

afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllEnvs();
});

describe("the webhook address filter", () => {
  it.each([
    "10.0.0.1",
    "172.16.0.1",
    "192.168.1.1",
    "169.254.169.254", // cloud metadata
    "127.0.0.1",
    "0.0.0.0",
    "100.64.0.1", // carrier-grade NAT
    "224.0.0.1",
    "255.255.255.255",
    "::1",
    "::",
    "fc00::1",
    "fd00:ec2::254", // AWS metadata over IPv6
    "fe80::1",
    "::ffff:10.0.0.1",
    "::ffff:127.0.0.1",
    "::7f00:1", // IPv4-compatible (::/96): 127.0.0.1
    "::127.0.0.1",
    "::a00:1", // 10.0.0.1
    "::808:808", // even a public IPv4 inside: the range is deprecated
    "not an address",
  ])("refuses %s", (address) => {
    expect(isForbiddenAddress(address)).toBe(true);
  });

  it.each(["93.184.215.14", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8"])("allows %s", (address) => {
    expect(isForbiddenAddress(address)).toBe(false);
  });

  it.each([
    "http://10.0.0.1/hook",
    "http://172.16.0.1/",
    "http://192.168.1.1/",
    "http://169.254.169.254/latest/meta-data/",
    "http://[fc00::1]/",
    "http://[::ffff:10.0.0.1]/",
    "http://[::7f00:1]/",
  ])("refuses %s before any socket opens", async (url) => {
    const connect = vi.spyOn(net.Socket.prototype, "connect");
    const result = await postOnce(url, "{}", {}, { timeoutMs: 1000, isForbidden: isForbiddenAddress });
    expect(result).toMatchObject({ ok: false, error: expect.stringMatching(/private or reserved address$/) });
    expect(connect).not.toHaveBeenCalled();
  });

  // Issue #37: WEBHOOK_ALLOW_PRIVATE=true allowed every address, metadata in any form included.
  it.each(["169.254.169.254", "64:ff9b::a9fe:a9fe", "2002:a9fe:a9fe::1", "fd00:ec2::254", "100.100.100.200"])(
    "refuses metadata address %s even with WEBHOOK_ALLOW_PRIVATE=true, and allows loopback",
    (address) => {
      vi.stubEnv("WEBHOOK_ALLOW_PRIVATE", "true");
      expect(configuredAddressFilter()(address)).toBe(true);
      expect(configuredAddressFilter()("127.0.0.1")).toBe(false);
    },
  );

  it("refuses a name whose answers include a private address, in the lookup the socket uses", async () => {
    const lookup = guardedLookup(isForbiddenAddress);
    const error = await new Promise<Error | null>((resolve) => lookup("localhost", {}, (failure) => resolve(failure)));
    expect(error?.message).toMatch(/^localhost resolves to (127\.0\.0\.1|::1), a private or reserved address$/);
  });
});
