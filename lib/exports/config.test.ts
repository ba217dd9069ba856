import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { parseDestinationFields, type DestinationType } from "./config";

const s3 = {
  bucket: "lake",
  region: "us-east-1",
  access_key_id: "AKIAEXAMPLE",
  secret_access_key: "secret/key+1",
};
const azure = { account_url: "https://acme.blob.core.windows.net", container: "lake", account_key: "a2V5a2V5a2V5" };
const sftp = {
  host: "sftp.example.com",
  port: 22,
  username: "acme",
  password: "pw",
  directory: "/incoming",
  host_key_sha256: `SHA256:${"A".repeat(43)}`,
};

let saved: string | undefined;
beforeEach(() => {
  saved = process.env.EXPORT_ALLOW_PRIVATE;
  // The production rule (the test run's NODE_ENV=test allows loopback, as development does).
  process.env.EXPORT_ALLOW_PRIVATE = "false";
});
afterEach(() => {
  if (saved === undefined) delete process.env.EXPORT_ALLOW_PRIVATE;
  else process.env.EXPORT_ALLOW_PRIVATE = saved;
});

describe("destination settings", () => {
  it.each<[string, DestinationType, Record<string, unknown>, RegExp]>([
    ["a bucket name with capitals", "s3", { ...s3, bucket: "Lake" }, /bucket name is not valid/],
    ["a bucket name too short", "s3", { ...s3, bucket: "ab" }, /bucket/],
    ["a bucket name that is an IP address", "s3", { ...s3, bucket: "10.0.0.1" }, /bucket name is not valid/],
    ["a bucket name with ..", "s3", { ...s3, bucket: "a..b" }, /bucket name is not valid/],
    ["an endpoint that is not a URL", "s3", { ...s3, endpoint: "minio:9000" }, /not a URL|https/],
    ["a plain-http endpoint", "s3", { ...s3, endpoint: "http://minio.example.com" }, /must be an https:\/\/ URL/],
    [
      "an endpoint with credentials",
      "s3",
      { ...s3, endpoint: "https://u:p@minio.example.com" },
      /user name and password/,
    ],
    [
      "an endpoint at the metadata address",
      "s3",
      { ...s3, endpoint: "https://169.254.169.254" },
      /private, local or reserved/,
    ],
    ["an endpoint at loopback", "s3", { ...s3, endpoint: "https://127.0.0.1:9000" }, /private, local or reserved/],
    ["an endpoint at an IPv6 loopback", "s3", { ...s3, endpoint: "https://[::1]/" }, /private, local or reserved/],
    ["an endpoint at localhost", "s3", { ...s3, endpoint: "https://localhost" }, /local address/],
    ["a prefix with ..", "s3", { ...s3, prefix: "a/../b" }, /\.\. folder/],
    ["an absolute prefix", "s3", { ...s3, prefix: "/a" }, /starts with \//],
    ["a secret with a control character", "s3", { ...s3, secret_access_key: "abc\u0007def" }, /control characters/],
    ["no secret", "s3", { ...s3, secret_access_key: undefined }, /Give the secret_access_key/],
    ["an unknown setting", "s3", { ...s3, acl: "public-read" }, /"acl" is not a setting of a s3 destination/],
    ["a container with capitals", "azure", { ...azure, container: "Lake" }, /container name is not valid/],
    [
      "a SAS token without a signature",
      "azure",
      { ...azure, account_key: undefined, sas_token: "sv=2024&sp=rw" },
      /no signature/,
    ],
    ["both a SAS token and a key", "azure", { ...azure, sas_token: "sig=abc" }, /only one of sas_token or account_key/],
    ["an account key that is not base64", "azure", { ...azure, account_key: "not base64!" }, /not base64/],
    ["a host with a space", "sftp", { ...sftp, host: "sftp example.com" }, /not a host name/],
    ["a link-local host", "sftp", { ...sftp, host: "169.254.169.254" }, /private, local or reserved/],
    ["a port out of range", "sftp", { ...sftp, port: 70000 }, /port must be from 1 to 65535/],
    ["a directory with ..", "sftp", { ...sftp, directory: "/incoming/../etc" }, /cannot contain \. or \.\./],
    ["a fingerprint that is not SHA256", "sftp", { ...sftp, host_key_sha256: "MD5:ab:cd" }, /ssh-keygen -lf/],
    ["a password with NUL", "sftp", { ...sftp, password: "pw\u0000" }, /control characters/],
    [
      "a private key that is not one",
      "sftp",
      { ...sftp, password: undefined, private_key: "hello" },
      /not in OpenSSH or PEM form/,
    ],
  ])("refuse %s with a sentence", (_what, type, fields, problem) => {
    expect(() => parseDestinationFields(type, fields)).toThrow(problem);
  });

  it("never echo a secret in a refusal", () => {
    try {
      parseDestinationFields("s3", { ...s3, secret_access_key: "leaky-secret\u0001" });
      expect.unreachable();
    } catch (error) {
      expect((error as Error).message).not.toContain("leaky-secret");
    }
  });

  it("take good settings, splitting the secrets off", () => {
    expect(parseDestinationFields("s3", { ...s3, prefix: "in" })).toEqual({
      type: "s3",
      config: {
        bucket: "lake",
        region: "us-east-1",
        force_path_style: false,
        prefix: "in/",
        access_key_id: "AKIAEXAMPLE",
      },
      secrets: { secret_access_key: "secret/key+1" },
    });
    expect(
      parseDestinationFields("azure", { ...azure, account_key: undefined, sas_token: "?sv=1&sig=abc" }).secrets,
    ).toEqual({
      sas_token: "sv=1&sig=abc",
    });
    const key = "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n";
    expect(parseDestinationFields("sftp", { ...sftp, password: undefined, private_key: key }).secrets).toEqual({
      private_key: key.trim(),
    });
  });

  it("allow loopback and private addresses with EXPORT_ALLOW_PRIVATE=true, never link-local", () => {
    process.env.EXPORT_ALLOW_PRIVATE = "true";
    expect(parseDestinationFields("s3", { ...s3, endpoint: "http://127.0.0.1:9000" }).config).toMatchObject({
      endpoint: "http://127.0.0.1:9000",
    });
    expect(() => parseDestinationFields("s3", { ...s3, endpoint: "http://169.254.169.254" })).toThrow(/reserved/);
    expect(() => parseDestinationFields("sftp", { ...sftp, host: "fe80::1" })).toThrow(/reserved/);
  });
});

// Issue #55: in `npm run dev` an export to a store on the developer's machine was refused.
describe("a store on this machine", () => {
  it.each([
    ["development", undefined, true],
    ["test", undefined, true],
    ["production", undefined, false],
    [undefined, undefined, false],
    ["development", "false", false],
  ])("NODE_ENV=%s, EXPORT_ALLOW_PRIVATE=%s: http://127.0.0.1 accepted: %s", (nodeEnv, setting, accepted) => {
    vi.stubEnv("NODE_ENV", nodeEnv);
    if (setting === undefined) delete process.env.EXPORT_ALLOW_PRIVATE;
    else process.env.EXPORT_ALLOW_PRIVATE = setting;
    const parse = () => parseDestinationFields("s3", { ...s3, endpoint: "http://127.0.0.1:9000" });
    if (accepted) expect(parse().config).toMatchObject({ endpoint: "http://127.0.0.1:9000" });
    else expect(parse).toThrow(/https:\/\/ URL|private, local or reserved/);
    vi.unstubAllEnvs();
  });
});
