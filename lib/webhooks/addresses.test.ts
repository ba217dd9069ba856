import ipaddr from "ipaddr.js";
import { describe, expect, it } from "vitest";
import { carriedIPv4, isAlwaysForbiddenAddress, isForbiddenAddress } from "./addresses";

/**
 * Every form of an address both filters judge (webhooks and exports share them): refused by the
 * strict filter, and refused even where private addresses are allowed (WEBHOOK_ALLOW_PRIVATE,
 * EXPORT_ALLOW_PRIVATE).
 */
describe("the address filters", () => {
  it.each([
    // address, what it is, refused, refused when private addresses are allowed
    ["169.254.169.254", "AWS/GCP/Azure metadata", true, true],
    ["169.254.170.2", "ECS task metadata", true, true],
    ["100.100.100.200", "Alibaba Cloud metadata", true, true],
    ["192.0.0.192", "Oracle Cloud metadata", true, true],
    ["168.63.129.16", "Azure WireServer", true, true],
    ["fd00:ec2::254", "AWS metadata over IPv6", true, true],
    ["fd20:ce::254", "GCP metadata over IPv6", true, true],
    ["fe80::1", "link-local IPv6", true, true],
    ["::ffff:169.254.169.254", "IPv4-mapped metadata", true, true],
    ["::ffff:a9fe:a9fe", "IPv4-mapped metadata, hex", true, true],
    ["::ffff:0:a9fe:a9fe", "IPv4-translated metadata", true, true],
    ["::ffff:0:169.254.169.254", "IPv4-translated metadata, dotted", true, true],
    ["::a9fe:a9fe", "IPv4-compatible metadata", true, true],
    ["64:ff9b::a9fe:a9fe", "NAT64 metadata", true, true],
    ["64:ff9b::169.254.169.254", "NAT64 metadata, dotted", true, true],
    ["64:ff9b::6464:64c8", "NAT64 Alibaba metadata", true, true],
    ["64:ff9b:1::a9fe:a9fe", "local NAT64 /96 metadata", true, true],
    ["64:ff9b:1:a9fe:a9:fe00::", "local NAT64 /48 metadata", true, true],
    ["64:ff9b:1:a9:fe:a9fe::", "local NAT64 /56 metadata", true, true],
    ["64:ff9b:1:0:a9:fea9:fe00:0", "local NAT64 /64 metadata", true, true],
    ["2002:a9fe:a9fe::1", "6to4 metadata", true, true],
    ["2002:6464:64c8::", "6to4 Alibaba metadata", true, true],
    ["2001:0:4136:e378:8000:63bf:5601:5601", "Teredo metadata client (inverted)", true, true],
    ["0.0.0.0", "unspecified", true, true],
    ["::", "unspecified IPv6", true, true],
    ["224.0.0.1", "multicast", true, true],
    ["ff02::1", "multicast IPv6", true, true],
    ["255.255.255.255", "broadcast", true, true],
    ["not an address", "not an address", true, true],
    ["127.0.0.1", "loopback", true, false],
    ["::1", "loopback IPv6", true, false],
    ["::ffff:127.0.0.1", "IPv4-mapped loopback", true, false],
    ["::7f00:1", "IPv4-compatible loopback", true, false],
    ["64:ff9b::a00:1", "NAT64 of 10.0.0.1", true, false],
    ["2002:c0a8:101::1", "6to4 of 192.168.1.1", true, false],
    ["10.1.2.3", "private", true, false],
    ["172.16.0.1", "private", true, false],
    ["192.168.1.1", "private", true, false],
    ["100.64.0.1", "carrier-grade NAT", true, false],
    ["fd00::1", "unique local", true, false],
    ["fd00:ec2::253", "AWS DNS over IPv6 (unique local, not metadata)", true, false],
    ["64:ff9b::808:808", "NAT64 of a public address (not unicast in itself)", true, false],
    ["::808:808", "IPv4-compatible public address (deprecated range)", true, false],
    ["8.8.8.8", "public", false, false],
    ["93.184.215.14", "public", false, false],
    ["::ffff:8.8.8.8", "IPv4-mapped public", false, false],
    ["2606:4700:4700::1111", "public IPv6", false, false],
  ])("%s (%s): refused %s, refused %s when private addresses are allowed", (address, _what, refused, always) => {
    expect(isForbiddenAddress(address)).toBe(refused);
    expect(isAlwaysForbiddenAddress(address)).toBe(always);
  });

  it.each([
    ["::ffff:a9fe:a9fe", ["169.254.169.254"]],
    ["::ffff:0:a9fe:a9fe", ["169.254.169.254"]],
    ["::a9fe:a9fe", ["169.254.169.254"]],
    ["64:ff9b::a9fe:a9fe", ["169.254.169.254"]],
    ["2002:a9fe:a9fe::1", ["169.254.169.254"]],
    ["64:ff9b:1:a9fe:a9:fe00::", ["169.254.169.254", "254.169.254.0", "169.254.0.0", "0.0.0.0"]],
    ["::1", []],
    ["::", []],
    ["2606:4700:4700::1111", []],
  ])("%s carries %j", (address, carried) => {
    expect(carriedIPv4(ipaddr.IPv6.parse(address)).map(String)).toEqual(carried);
  });
});
