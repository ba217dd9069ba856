import http from "node:http";
import net from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { endpointUrlSchema } from "./endpoints";
import {
  configuredAddressFilter,
  guardedLookup,
  isForbiddenAddress,
  postOnce,
  localNetworkSettingAllows,
} from "./ssrf";

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

// Issue #39: a receiver on the developer's own machine (http://127.0.0.1) was refused everywhere.
describe("webhook receivers and export stores on this machine", () => {
  it.each([
    ["development", undefined, true],
    ["test", undefined, true],
    ["production", undefined, false],
    [undefined, undefined, false], // a worker started without NODE_ENV keeps the production rule
    ["development", "false", false],
    ["production", "true", true],
  ])("NODE_ENV=%s with the setting %s allows them: %s", (nodeEnv, value, allowed) => {
    // Issue #55: exports' EXPORT_ALLOW_PRIVATE follows the same one rule.
    for (const name of ["WEBHOOK_ALLOW_PRIVATE", "WEBHOOK_ALLOW_INSECURE", "EXPORT_ALLOW_PRIVATE"] as const) {
      const env = { NODE_ENV: nodeEnv, ...(value ? { [name]: value } : {}) } as NodeJS.ProcessEnv;
      expect(localNetworkSettingAllows(name, env)).toBe(allowed);
    }
  });

  it("accepts http://127.0.0.1 and delivers to it outside production, never to cloud metadata", async () => {
    vi.stubEnv("NODE_ENV", "development");
    vi.stubEnv("WEBHOOK_ALLOW_PRIVATE", undefined);
    vi.stubEnv("WEBHOOK_ALLOW_INSECURE", undefined);
    const receiver = http.createServer((_, response) => response.end("thanks"));
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(receiver.address() as net.AddressInfo).port}/hooks`;
      expect(endpointUrlSchema.safeParse(url).success).toBe(true);
      expect(endpointUrlSchema.safeParse("http://localhost:4000/hooks").success).toBe(true);
      expect(await postOnce(url, "{}", {}, { timeoutMs: 5000 })).toMatchObject({ ok: true, status: 200 });
      expect(endpointUrlSchema.safeParse("http://example.com/hooks").success).toBe(false);
      expect(endpointUrlSchema.safeParse("https://169.254.169.254/").success).toBe(false);
    } finally {
      await new Promise((resolve) => receiver.close(resolve));
    }
  });

  it("refuses them in production, as before", async () => {
    vi.stubEnv("NODE_ENV", "production");
    vi.stubEnv("WEBHOOK_ALLOW_PRIVATE", undefined);
    vi.stubEnv("WEBHOOK_ALLOW_INSECURE", undefined);
    expect(endpointUrlSchema.safeParse("http://127.0.0.1:4000/hooks").error?.issues[0]?.message).toBe(
      "Use an https:// URL: events carry your order data.",
    );
    expect(endpointUrlSchema.safeParse("https://127.0.0.1:4000/hooks").success).toBe(false);
    expect(await postOnce("http://127.0.0.1:9/hooks", "{}", {}, { timeoutMs: 1000 })).toMatchObject({
      ok: false,
      error: "127.0.0.1 is a private or reserved address",
    });
  });
});
