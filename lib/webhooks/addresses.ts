import ipaddr from "ipaddr.js";

/**
 * How webhooks and exports judge an address they are about to connect to (one rule for both).
 * An IPv6 address can carry an IPv4 one that a network on the way turns back into IPv4 (a NAT64
 * gateway, a 6to4 relay, the kernel for mapped addresses), so every IPv4 address an IPv6 one
 * carries is judged too: `64:ff9b::a9fe:a9fe` is 169.254.169.254 behind NAT64.
 */

type Address = ipaddr.IPv4 | ipaddr.IPv6;
type Range = [Address, number];

/** Cloud metadata services (instance credentials): refused even where private addresses are allowed. */
export const CLOUD_METADATA_RANGES: readonly Range[] = [
  "169.254.0.0/16", // link-local: AWS, GCP, Azure, Oracle, OpenStack... at 169.254.169.254, ECS at .170.2
  "fe80::/10", // link-local IPv6
  "fd00:ec2::254/128", // AWS instance metadata over IPv6
  "fd20:ce::254/128", // GCP metadata over IPv6
  "100.100.100.200/32", // Alibaba Cloud
  "192.0.0.192/32", // Oracle Cloud (older instances)
  "168.63.129.16/32", // Azure WireServer (a public address answered only inside Azure)
].map((text) => ipaddr.parseCIDR(text));

const v6 = (text: string) => ipaddr.IPv6.parseCIDR(text);
const NAT64_WELL_KNOWN = v6("64:ff9b::/96");
const NAT64_LOCAL = v6("64:ff9b:1::/48");
const SIX_TO_FOUR = v6("2002::/16");
const TEREDO = v6("2001::/32");
const IPV4_MAPPED = v6("::ffff:0:0/96");
const IPV4_TRANSLATED = v6("::ffff:0:0:0/96");
const IPV4_COMPATIBLE = v6("::/96");

/**
 * The IPv4 addresses an IPv6 address carries: NAT64 (64:ff9b::/96; in 64:ff9b:1::/48 the
 * gateway's prefix length is not known here, so the address under each length RFC 6052 allows
 * there: 48, 56, 64 and 96 bits, skipping bits 64-71), 6to4 (2002::/16), Teredo's client
 * (2001::/32, inverted), IPv4-mapped (::ffff:0:0/96), IPv4-translated (::ffff:0:0:0/96) and
 * IPv4-compatible (::/96 but :: and ::1).
 */
export function carriedIPv4(address: ipaddr.IPv6): ipaddr.IPv4[] {
  const bytes = address.toByteArray();
  if (address.match(NAT64_LOCAL)) {
    const withoutU = [...bytes.slice(0, 8), ...bytes.slice(9)];
    return [6, 7, 8, 11].map((start) => new ipaddr.IPv4(withoutU.slice(start, start + 4)));
  }
  if (address.match(SIX_TO_FOUR)) return [new ipaddr.IPv4(bytes.slice(2, 6))];
  if (address.match(TEREDO)) return [new ipaddr.IPv4(bytes.slice(12, 16).map((byte) => byte ^ 0xff))];
  const low = new ipaddr.IPv4(bytes.slice(12, 16));
  if (address.match(NAT64_WELL_KNOWN) || address.match(IPV4_MAPPED) || address.match(IPV4_TRANSLATED)) return [low];
  const unspecifiedOrLoopback = address.parts.slice(0, 7).every((part) => part === 0) && address.parts[7]! <= 1;
  return address.match(IPV4_COMPATIBLE) && !unspecifiedOrLoopback ? [low] : [];
}

/** The address itself, then every IPv4 address it carries. */
function everyForm(address: string): Address[] {
  const parsed = ipaddr.parse(address);
  return parsed instanceof ipaddr.IPv6 ? [parsed, ...carriedIPv4(parsed)] : [parsed];
}

const isCloudMetadata = (form: Address) =>
  CLOUD_METADATA_RANGES.some(([network, bits]) => form.kind() === network.kind() && form.match(network, bits));

/**
 * Refused whatever the settings (WEBHOOK_ALLOW_PRIVATE, EXPORT_ALLOW_PRIVATE): not an address,
 * cloud metadata or link-local in any form, unspecified, multicast or broadcast.
 */
export function isAlwaysForbiddenAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return true;
  if (everyForm(address).some(isCloudMetadata)) return true;
  return ["unspecified", "multicast", "broadcast"].includes(ipaddr.process(address).range());
}

/**
 * Refused unless private addresses are allowed: anything but a public unicast address, in any
 * form. A mapped address is judged as the IPv4 it carries (::ffff:8.8.8.8 is public); other
 * carrying ranges (NAT64, 6to4, translated) are not unicast, and IPv4-compatible ones (::/96,
 * deprecated by RFC 4291, which ipaddr.js calls unicast) are never a public receiver.
 */
export function isForbiddenAddress(address: string): boolean {
  if (isAlwaysForbiddenAddress(address)) return true;
  const [parsed, ...carried] = everyForm(address);
  if (parsed instanceof ipaddr.IPv6 && parsed.match(IPV4_COMPATIBLE)) return true;
  const judged = parsed instanceof ipaddr.IPv6 && parsed.match(IPV4_MAPPED) ? carried : [parsed!, ...carried];
  return judged.some((form) => form.range() !== "unicast");
}
