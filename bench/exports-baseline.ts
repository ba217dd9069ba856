import { promises as fs } from "node:fs";
import path from "node:path";
import { PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { BlobServiceClient, StorageSharedKeyCredential } from "@azure/storage-blob";
import ssh2, { type SFTPWrapper } from "ssh2";
import { accountNameOf } from "../lib/exports/targets/azure";

/**
 * The baseline of bench/exports.ts: each store's own SDK uploading the same files, from a process
 * of its own as the export does: `node --import tsx bench/exports-baseline.ts <s3|azure|sftp>
 * <config.json> <prefix> FILE...`. One file goes up the SDK's own way (S3 `Upload` with 8 MiB
 * parts, 4 at once; Azure `uploadFile` with 8 MiB blocks, 4 at once; ssh2 `fastPut`); many go up
 * 8 at once (PutObject, Put Blob, fastPut). Prints `{"seconds": N}`.
 */
const [store, configFile, prefix, ...files] = process.argv.slice(2);
const config = JSON.parse(await fs.readFile(configFile!, "utf8")) as Record<string, string>;
const PART = 8 * 1024 * 1024;

async function eightAtOnce(work: (file: string) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(8, files.length) }, async () => {
      while (next < files.length) await work(files[next++]!);
    }),
  );
}

const started = performance.now();
if (store === "s3") {
  const client = new S3Client({
    region: config.region ?? "us-east-1",
    endpoint: config.endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: config.access_key_id!, secretAccessKey: config.secret_access_key! },
    requestChecksumCalculation: "WHEN_REQUIRED",
  });
  if (files.length === 1) {
    const body = (await import("node:fs")).createReadStream(files[0]!);
    await new Upload({
      client,
      params: { Bucket: config.bucket, Key: `${prefix}/${path.basename(files[0]!)}`, Body: body },
      partSize: PART,
      queueSize: 4,
    }).done();
  } else {
    await eightAtOnce(async (file) => {
      await client.send(
        new PutObjectCommand({
          Bucket: config.bucket,
          Key: `${prefix}/${path.basename(file)}`,
          Body: await fs.readFile(file),
        }),
      );
    });
  }
  client.destroy();
} else if (store === "azure") {
  const service = new BlobServiceClient(
    config.account_url!,
    new StorageSharedKeyCredential(accountNameOf(config.account_url!), config.account_key!),
  );
  const container = service.getContainerClient(config.container!);
  if (files.length === 1) {
    await container
      .getBlockBlobClient(`${prefix}/${path.basename(files[0]!)}`)
      .uploadFile(files[0]!, { blockSize: PART, concurrency: 4 });
  } else {
    await eightAtOnce(async (file) => {
      const bytes = await fs.readFile(file);
      await container.getBlockBlobClient(`${prefix}/${path.basename(file)}`).upload(bytes, bytes.length);
    });
  }
} else if (store === "sftp") {
  const client = new ssh2.Client();
  await new Promise<void>((resolve, reject) => {
    client.once("ready", resolve).once("error", reject);
    client.connect({
      host: config.host,
      port: Number(config.port),
      username: config.username,
      password: config.password,
      hostVerifier: () => true,
    });
  });
  const sftp = await new Promise<SFTPWrapper>((resolve, reject) =>
    client.sftp((error, wrapper) => (error ? reject(error) : resolve(wrapper))),
  );
  const folder = `${config.directory}/${prefix}`;
  await new Promise<void>((resolve) => sftp.mkdir(folder, () => resolve()));
  const put = (file: string) =>
    new Promise<void>((resolve, reject) =>
      sftp.fastPut(file, `${folder}/${path.basename(file)}`, (error) => (error ? reject(error) : resolve())),
    );
  if (files.length === 1) await put(files[0]!);
  else await eightAtOnce(put);
  client.end();
} else {
  throw new Error(`unknown store ${store}`);
}
console.log(JSON.stringify({ seconds: (performance.now() - started) / 1000 }));
