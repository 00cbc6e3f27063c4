// A real S3-compatible server for tests and benchmarks: `rclone serve s3` on 127.0.0.1 and a port the OS picks,
// over a temp directory (a bucket is a folder), with a random key pair. rclone comes from
// PIXELMILL_RCLONE_PATH, else .tools/s3-venv (installed by the tests' global setup), else PATH.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { isExecutable, onPath, projectRoot } from '../temporal/binaries.js';

export interface S3TestServer {
  /** e.g. `http://127.0.0.1:41234` */
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** The environment a worker would have: AWS keys (and region) for this server. */
  env: NodeJS.ProcessEnv;
  /** An SDK client with the server's credentials, to look at objects independently of the store. */
  client: S3Client;
  createBucket(name: string): Promise<void>;
  stop(): Promise<void>;
}

function rcloneBinary(): string {
  const fromEnv = process.env.PIXELMILL_RCLONE_PATH;
  if (fromEnv) return fromEnv;
  const tools = join(projectRoot(), '.tools', 's3-venv', 'bin', 'rclone');
  if (isExecutable(tools)) return tools;
  const fromPath = onPath('rclone');
  if (fromPath) return fromPath;
  throw new Error(
    'rclone not found: run `node scripts/install-s3-server.mjs`, set PIXELMILL_RCLONE_PATH, or put rclone on PATH',
  );
}

/** Resolves with the server's URL once rclone prints it; rejects if rclone exits first. */
function listeningUrl(child: ChildProcess, output: () => string): Promise<string> {
  return new Promise((resolve, reject) => {
    const look = (): void => {
      const match = /Starting s3 server on \[(http:\/\/127\.0\.0\.1:\d+)\/?\]/.exec(output());
      if (match?.[1] !== undefined) {
        child.stderr?.off('data', look);
        child.off('exit', exited);
        resolve(match[1]);
      }
    };
    const exited = (code: number | null): void =>
      reject(new Error(`rclone serve s3 exited (${code}) before listening: ${output().trim()}`));
    child.stderr?.on('data', look);
    child.once('exit', exited);
    child.once('error', reject);
  });
}

export async function startS3Server(): Promise<S3TestServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'pixelmill-s3-'));
  const accessKeyId = `AK${randomBytes(8).toString('hex').toUpperCase()}`;
  const secretAccessKey = randomBytes(20).toString('hex');
  const child = spawn(
    rcloneBinary(),
    ['serve', 's3', '--addr', '127.0.0.1:0', '--auth-key', `${accessKeyId},${secretAccessKey}`, dataDir],
    // No user config: the server must not depend on the machine's rclone.conf.
    { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, RCLONE_CONFIG: '/dev/null' } },
  );
  let output = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    if (output.length < 64_000) output += chunk;
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let client: S3Client | undefined;
  const stop = async (): Promise<void> => {
    client?.destroy();
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const endpoint = await listeningUrl(child, () => output);
    const sdk = new S3Client({
      endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId, secretAccessKey },
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
    client = sdk;
    return {
      endpoint,
      accessKeyId,
      secretAccessKey,
      env: {
        AWS_ACCESS_KEY_ID: accessKeyId,
        AWS_SECRET_ACCESS_KEY: secretAccessKey,
        AWS_REGION: 'us-east-1',
      },
      client: sdk,
      createBucket: async (name) => void (await sdk.send(new CreateBucketCommand({ Bucket: name }))),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
