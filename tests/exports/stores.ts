import { spawn } from "node:child_process";
import { createHash, timingSafeEqual } from "node:crypto";
import { promises as fs, constants as fsConstants } from "node:fs";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { BlobServiceClient, StorageSharedKeyCredential } from "@azure/storage-blob";
import ssh2, { type Connection, type ParsedKey, type Server } from "ssh2";
import { hostKeyFingerprint } from "../../lib/exports/targets/sftp";

/**
 * The buyers' stores of the export tests, real protocols on loopback: Azurite's blob service (a
 * process of its own, telemetry off) and an SFTP server in this process (ssh2) with a host key of
 * its own, a user, and faults on demand (a disk that fills up, a server that stops answering
 * writes, a host key that changes). The S3 store is tests/helpers/s3.ts.
 */

/** Azurite's development account: a well-known, public name and key (not a secret). */
export const AZURITE_ACCOUNT = "devstoreaccount1";
export const AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

export type TestAzurite = {
  accountUrl: string;
  /** A container made for the test (Azurite starts with none). */
  createContainer: (name: string) => Promise<void>;
  /** A blob's bytes and metadata, or null. */
  blob: (container: string, name: string) => Promise<{ bytes: Buffer; metadata: Record<string, string> } | null>;
  /** The names of a container's blobs (committed ones only). */
  blobNames: (container: string) => Promise<string[]>;
  stop: () => Promise<void>;
};

export async function startTestAzurite(): Promise<TestAzurite> {
  const location = await fs.mkdtemp(path.join(os.tmpdir(), "test-azurite-"));
  const main = path.resolve("node_modules/azurite/dist/src/blob/main.js");
  const child = spawn(
    process.execPath,
    [
      main,
      "--blobHost",
      "127.0.0.1",
      "--blobPort",
      "0",
      "--location",
      location,
      "--silent",
      "--disableTelemetry",
      "--skipApiVersionCheck",
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const port = await new Promise<number>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`Azurite exited (${code}).`)));
    createInterface({ input: child.stdout! }).on("line", (line) => {
      const match = /listens on http:\/\/127\.0\.0\.1:(\d+)/.exec(line);
      if (match) resolve(Number(match[1]));
    });
  });
  const accountUrl = `http://127.0.0.1:${port}/${AZURITE_ACCOUNT}`;
  const service = new BlobServiceClient(accountUrl, new StorageSharedKeyCredential(AZURITE_ACCOUNT, AZURITE_KEY));
  return {
    accountUrl,
    createContainer: async (name) => {
      await service.getContainerClient(name).createIfNotExists();
    },
    blob: async (container, name) => {
      const client = service.getContainerClient(container).getBlockBlobClient(name);
      if (!(await client.exists())) return null;
      const properties = await client.getProperties();
      return { bytes: await client.downloadToBuffer(), metadata: properties.metadata ?? {} };
    },
    blobNames: async (container) => {
      const names: string[] = [];
      for await (const blob of service.getContainerClient(container).listBlobsFlat()) names.push(blob.name);
      return names.sort();
    },
    stop: async () => {
      if (child.exitCode === null) {
        await new Promise((resolve) => {
          child.once("exit", resolve);
          child.kill("SIGTERM");
        });
      }
      await fs.rm(location, { recursive: true, force: true });
    },
  };
}

// ssh2 is CommonJS: its named exports are read from the default one (Node cannot detect them all).
const { utils } = ssh2;
const { STATUS_CODE, flagsToString } = utils.sftp;

export type SftpFaults = {
  /** Writes past this many bytes in all are refused as a full disk would refuse them. */
  diskQuotaBytes?: number;
  /** Writes past this many bytes in all get no answer (a server that hangs). */
  hangAfterBytes?: number;
  /** Every `readdir` answers the same names and folders again, never the end (a hostile listing); counted here. */
  endlessReaddir?: { batches: number };
};

export type TestSftp = {
  host: string;
  port: number;
  username: string;
  password: string;
  /** A private key the server accepts for `username` (OpenSSH form). */
  privateKey: string;
  /** The server's host key fingerprint, as ssh-keygen -lf prints it. */
  fingerprint: () => string;
  /** The directory on this machine that the server's / is. */
  root: string;
  faults: SftpFaults;
  /** The server presents a new host key from now on (as a server reinstalled, or one in the middle). */
  changeHostKey: () => Promise<void>;
  /** Every file under the root, relative to it (temporary files included). */
  files: () => Promise<string[]>;
  stop: () => Promise<void>;
};

/**
 * An SSH key pair in OpenSSH's format. ECDSA P-256, not Ed25519: ssh2's generateKeyPairSync strips
 * an Ed25519 public key's leading zero bytes with the bit string's padding byte, so one key in 256
 * comes out 31 bytes long and "Malformed" to its own parser (seen failing CI; 66 of 20,000 keys
 * here). An ECDSA point starts with 0x04 and is never cut.
 */
const sshKeyPair = () => utils.generateKeyPairSync("ecdsa", { bits: 256 });

/** An SFTP server on loopback in this process: password and public-key sign-in, paths under a temporary root. */
export async function startTestSftp(): Promise<TestSftp> {
  const root = await fs.mkdtemp(path.join(os.tmpdir(), "test-sftp-"));
  const username = "exporter";
  const password = "sftp-password-0123456789";
  const clientKey = sshKeyPair();
  const allowed = utils.parseKey(clientKey.public) as ParsedKey;
  let hostKey = sshKeyPair().private;
  const faults: SftpFaults = {};
  let written = 0;
  const connections = new Set<Connection>();

  const local = (remote: string) => {
    const resolved = path.resolve(root, `.${path.posix.resolve("/", remote)}`);
    if (resolved !== root && !resolved.startsWith(root + path.sep)) throw new Error("outside the root");
    return resolved;
  };
  const attrsOf = (stats: import("node:fs").Stats) => ({
    mode: stats.mode,
    uid: stats.uid,
    gid: stats.gid,
    size: stats.size,
    atime: Math.floor(stats.atimeMs / 1000),
    mtime: Math.floor(stats.mtimeMs / 1000),
  });

  const onClient = (client: Connection) => {
    connections.add(client);
    client.on("close", () => connections.delete(client));
    client.on("error", () => {});
    client.on("authentication", (context) => {
      if (context.username !== username) return context.reject();
      if (context.method === "password" && context.password === password) return context.accept();
      if (context.method === "publickey") {
        const same =
          context.key.algo === allowed.type &&
          context.key.data.length === allowed.getPublicSSH().length &&
          timingSafeEqual(context.key.data, allowed.getPublicSSH());
        if (same && (!context.signature || allowed.verify(context.blob!, context.signature, context.hashAlgo))) {
          return context.accept();
        }
      }
      context.reject(["password", "publickey"]);
    });
    client.on("ready", () => {
      client.on("session", (acceptSession) => {
        const session = acceptSession();
        session.on("sftp", (acceptSftp) => {
          const sftp = acceptSftp();
          const handles = new Map<number, { fd: import("node:fs/promises").FileHandle; path: string }>();
          /** Open directories: the entries not sent yet, a batch per READDIR as real servers do. */
          const directories = new Map<number, import("ssh2").FileEntry[]>();
          let nextHandle = 0;
          const handleOf = (buffer: Buffer) => handles.get(buffer.readUInt32BE(0));
          const fail = (reqid: number, error: unknown) => {
            const code = (error as NodeJS.ErrnoException).code;
            sftp.status(
              reqid,
              code === "ENOENT"
                ? STATUS_CODE.NO_SUCH_FILE
                : code === "EACCES"
                  ? STATUS_CODE.PERMISSION_DENIED
                  : STATUS_CODE.FAILURE,
              (error as Error).message,
            );
          };
          sftp.on("OPEN", async (reqid, filename, flags) => {
            try {
              const fd = await fs.open(local(filename), flagsToString(flags) ?? "r");
              const id = nextHandle++;
              handles.set(id, { fd, path: filename });
              const handle = Buffer.alloc(4);
              handle.writeUInt32BE(id);
              sftp.handle(reqid, handle);
            } catch (error) {
              fail(reqid, error);
            }
          });
          sftp.on("WRITE", async (reqid, handle, offset, data) => {
            const open = handleOf(handle);
            if (!open) return sftp.status(reqid, STATUS_CODE.FAILURE, "bad handle");
            if (faults.hangAfterBytes !== undefined && written + data.length > faults.hangAfterBytes) return;
            if (faults.diskQuotaBytes !== undefined && written + data.length > faults.diskQuotaBytes) {
              return sftp.status(reqid, STATUS_CODE.FAILURE, "No space left on device");
            }
            try {
              await open.fd.write(data, 0, data.length, offset);
              written += data.length;
              sftp.status(reqid, STATUS_CODE.OK);
            } catch (error) {
              fail(reqid, error);
            }
          });
          sftp.on("READ", async (reqid, handle, offset, length) => {
            const open = handleOf(handle);
            if (!open) return sftp.status(reqid, STATUS_CODE.FAILURE, "bad handle");
            const buffer = Buffer.alloc(length);
            const { bytesRead } = await open.fd.read(buffer, 0, length, offset);
            if (bytesRead === 0) return sftp.status(reqid, STATUS_CODE.EOF);
            sftp.data(reqid, buffer.subarray(0, bytesRead));
          });
          sftp.on("FSTAT", async (reqid, handle) => {
            const open = handleOf(handle);
            if (!open) return sftp.status(reqid, STATUS_CODE.FAILURE, "bad handle");
            sftp.attrs(reqid, attrsOf(await open.fd.stat()));
          });
          sftp.on("OPENDIR", async (reqid, remote) => {
            try {
              const folder = local(remote);
              const names = await fs.readdir(folder);
              const entries = await Promise.all(
                names.map(async (name) => {
                  const attrs = attrsOf(await fs.stat(path.join(folder, name)));
                  return { filename: name, longname: name, attrs };
                }),
              );
              const id = nextHandle++;
              directories.set(id, entries);
              const handle = Buffer.alloc(4);
              handle.writeUInt32BE(id);
              sftp.handle(reqid, handle);
            } catch (error) {
              fail(reqid, error);
            }
          });
          sftp.on("READDIR", (reqid, handle) => {
            const entries = directories.get(handle.readUInt32BE(0));
            if (!entries) return sftp.status(reqid, STATUS_CODE.FAILURE, "bad handle");
            if (faults.endlessReaddir) {
              faults.endlessReaddir.batches++;
              const folder = { mode: 0o040755, uid: 0, gid: 0, size: 4096, atime: 0, mtime: 0 };
              const names = Array.from({ length: 50 }, (_, i) => `folder-${i}`);
              return sftp.name(reqid, [
                ...entries.slice(0, 50),
                ...names.map((name) => ({ filename: name, longname: name, attrs: folder })),
              ]);
            }
            if (entries.length === 0) return sftp.status(reqid, STATUS_CODE.EOF);
            sftp.name(reqid, entries.splice(0, 100));
          });
          sftp.on("CLOSE", async (reqid, handle) => {
            if (directories.delete(handle.readUInt32BE(0))) return sftp.status(reqid, STATUS_CODE.OK);
            const open = handleOf(handle);
            if (!open) return sftp.status(reqid, STATUS_CODE.FAILURE, "bad handle");
            handles.delete(handle.readUInt32BE(0));
            await open.fd.close();
            sftp.status(reqid, STATUS_CODE.OK);
          });
          for (const event of ["STAT", "LSTAT"] as const) {
            sftp.on(event, async (reqid: number, remote: string) => {
              try {
                sftp.attrs(reqid, attrsOf(await fs.stat(local(remote))));
              } catch (error) {
                fail(reqid, error);
              }
            });
          }
          sftp.on("REMOVE", async (reqid, remote) => {
            await fs.unlink(local(remote)).then(
              () => sftp.status(reqid, STATUS_CODE.OK),
              (error) => fail(reqid, error),
            );
          });
          sftp.on("RENAME", async (reqid, from, to) => {
            await fs.rename(local(from), local(to)).then(
              () => sftp.status(reqid, STATUS_CODE.OK),
              (error) => fail(reqid, error),
            );
          });
          sftp.on("MKDIR", async (reqid, remote) => {
            await fs.mkdir(local(remote)).then(
              () => sftp.status(reqid, STATUS_CODE.OK),
              (error) => fail(reqid, error),
            );
          });
          sftp.on("REALPATH", (reqid, remote) => {
            const resolved = path.posix.resolve("/", remote);
            sftp.name(reqid, [{ filename: resolved, longname: resolved, attrs: {} as never }]);
          });
        });
      });
    });
  };
  const listen = async (at: number) => {
    const started = new ssh2.Server({ hostKeys: [hostKey] }, onClient);
    await new Promise<void>((resolve) => started.listen(at, "127.0.0.1", resolve));
    return started;
  };
  const close = async (running: Server) => {
    for (const connection of connections) connection.end();
    await new Promise<void>((resolve) => running.close(() => resolve()));
  };
  let server = await listen(0);
  const { port } = server.address() as AddressInfo;
  const fingerprint = () => hostKeyFingerprint((utils.parseKey(hostKey) as ParsedKey).getPublicSSH());
  return {
    host: "127.0.0.1",
    port,
    username,
    password,
    privateKey: clientKey.private,
    fingerprint,
    root,
    faults,
    changeHostKey: async () => {
      // ssh2's server reads its host keys once: a new server takes the port with a new key.
      await close(server);
      hostKey = sshKeyPair().private;
      server = await listen(port);
    },
    files: async () => {
      const entries = await fs.readdir(root, { recursive: true, withFileTypes: true });
      return entries
        .filter((entry) => entry.isFile())
        .map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)))
        .sort();
    },
    stop: async () => {
      await close(server);
      await fs.rm(root, { recursive: true, force: true });
    },
  };
}

/** The sha256 of bytes, hex. */
export const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

/** Whether a file exists at `file`. */
export const exists = (file: string) =>
  fs.access(file, fsConstants.F_OK).then(
    () => true,
    () => false,
  );
