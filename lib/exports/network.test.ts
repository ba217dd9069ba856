import { describe, expect, it } from "vitest";
import { exportAddressFilter, literalHostProblem } from "./network";

describe("the export address filter", () => {
  const strict = exportAddressFilter({});
  const allowing = exportAddressFilter({ EXPORT_ALLOW_PRIVATE: "true" });

  it.each([
    ["169.254.169.254", true, true],
    ["::ffff:169.254.169.254", true, true],
    ["::ffff:a9fe:a9fe", true, true],
    ["::a9fe:a9fe", true, true],
    ["fe80::1", true, true],
    ["127.0.0.1", true, false],
    ["::1", true, false],
    ["::ffff:127.0.0.1", true, false],
    ["10.1.2.3", true, false],
    ["192.168.1.1", true, false],
    ["172.16.0.1", true, false],
    ["fd00::1", true, false],
    ["0.0.0.0", true, true],
    ["224.0.0.1", true, true],
    ["8.8.8.8", false, false],
    ["2606:4700:4700::1111", false, false],
    ["not an address", true, true],
  ])("%s: refused %s, with EXPORT_ALLOW_PRIVATE=true refused %s", (address, refused, refusedWhenAllowed) => {
    expect(strict(address)).toBe(refused);
    expect(allowing(address)).toBe(refusedWhenAllowed);
  });

  // Issue #37: cloud metadata in IPv6 forms, and Alibaba's, passed with EXPORT_ALLOW_PRIVATE=true (every form: ../webhooks/addresses.test.ts).
  it.each(["64:ff9b::a9fe:a9fe", "2002:a9fe:a9fe::1", "::ffff:0:a9fe:a9fe", "fd00:ec2::254", "100.100.100.200"])(
    "refuses metadata address %s even with EXPORT_ALLOW_PRIVATE=true",
    (address) => {
      expect(allowing(address)).toBe(true);
      expect(literalHostProblem(`[${address}]`, allowing)).toMatch(/private, local or reserved/);
    },
  );

  it("refuses private IP literals and localhost written into a URL or host", () => {
    expect(literalHostProblem("169.254.169.254", allowing)).toMatch(/private, local or reserved/);
    expect(literalHostProblem("[::1]", strict)).toMatch(/::1/);
    expect(literalHostProblem("localhost", strict)).toMatch(/local address/);
    expect(literalHostProblem("localhost", allowing)).toBeUndefined();
    expect(literalHostProblem("example.com", strict)).toBeUndefined();
  });
});
