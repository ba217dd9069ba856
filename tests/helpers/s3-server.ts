/**
 * The tests' S3-compatible store, in a process of its own: @20minutes/s3rver on loopback, which
 * verifies SigV4 signatures. Started by tests/helpers/s3.ts; prints `{"port": N}` once listening
 * and runs until it is sent SIGTERM. Arguments: the data directory and the bucket names.
 *
 * One correction of s3rver, and only in this process: it builds SigV4's canonical query string
 * with encodeURIComponent, which leaves `! ' ( ) *` unencoded where AWS (and the AWS SDK that
 * signs) encode every character outside RFC 3986's unreserved set. A presigned URL whose
 * response-content-disposition carries RFC 6266's `filename*=UTF-8''...` would then be refused
 * although real S3 accepts it. Encoding those five characters too makes s3rver compute what S3 does.
 */
const encodeComponent = globalThis.encodeURIComponent;
globalThis.encodeURIComponent = (value: string | number | boolean) =>
  encodeComponent(value).replace(/[!'()*]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`);

const { default: S3rver } = await import("@20minutes/s3rver");
const [directory, ...buckets] = process.argv.slice(2);
const server = new S3rver({
  address: "127.0.0.1",
  port: 0,
  silent: true,
  directory,
  configureBuckets: buckets.map((name) => ({ name })),
});
const { port } = await server.run();
console.log(JSON.stringify({ port }));
process.once("SIGTERM", () => void server.close().finally(() => process.exit(0)));
export {};
