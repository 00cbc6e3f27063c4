// A Temporal cluster that serves TLS and requires client certificates (mTLS), with a CA and
// certificates this test makes (test/support/cluster-certs.ts), reached by the CLI and a worker
// through Temporal's environment configuration only: TEMPORAL_TLS_* variables, or a profile of
// a temporal.toml. Without the client certificate the connection is refused, and the CLI says so
// in one line, without a stack trace.
//
// Skipped, saying why, only on a machine without Go (the server cannot be built there).
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_API_KEY } from '../emulator/index.js';
import { FAST_EMULATOR } from './support/catalog-harness.js';
import { CLI, collectOutput, type CliResult } from './support/cli.js';
import { makeTestCertificates } from './support/cluster-certs.js';
import {
  clusterTools,
  startTemporalCluster,
  type ClusterTlsFiles,
  type TemporalCluster,
} from './support/cluster.js';
import { startTestEmulator } from './support/emulator.js';
import { waitUntil } from './support/wait.js';

const installed = await clusterTools();
const skipReason = 'skip' in installed ? installed.skip : undefined;

let cluster: TemporalCluster;
let certs: ClusterTlsFiles;
let dir: string;
let baseEnv: NodeJS.ProcessEnv;

beforeAll(async () => {
  if (!('tools' in installed)) return;
  dir = mkdtempSync(join(tmpdir(), 'pixelmill-cluster-tls-'));
  mkdirSync(join(dir, 'certs'));
  certs = makeTestCertificates(join(dir, 'certs'));
  baseEnv = {
    ...Object.fromEntries(
      Object.entries(process.env).filter(
        ([name]) => !/^(TEMPORAL|PIXELMILL|AWS)_/.test(name) && name !== 'XDG_CONFIG_HOME',
      ),
    ),
    HOME: dir,
  };
  cluster = await startTemporalCluster(installed.tools, { tls: certs });
  process.stderr.write(`cluster-tls: the cluster started in ${(cluster.startMs / 1000).toFixed(1)} s\n`);
}, 600_000);

afterAll(async () => {
  await cluster?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function pixelmill(args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: dir,
    env: { ...baseEnv, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return collectOutput(child);
}

/**
 * The mTLS settings as Temporal's environment variables. The server name is the certificate's
 * DNS name: Node warns on stderr when TLS's server name is an IP address (RFC 6066).
 */
function mtlsEnv(): NodeJS.ProcessEnv {
  return {
    TEMPORAL_ADDRESS: cluster.address,
    TEMPORAL_NAMESPACE: cluster.namespace,
    TEMPORAL_TLS_SERVER_NAME: 'localhost',
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: certs.caFile,
    TEMPORAL_TLS_CLIENT_CERT_PATH: certs.clientCertFile,
    TEMPORAL_TLS_CLIENT_KEY_PATH: certs.clientKeyFile,
  };
}

describe.skipIf(skipReason !== undefined)(
  `pixelmill on a Temporal cluster that requires client certificates${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
    it('`setup` and a worker connect with the certificate named by TEMPORAL_TLS_* variables', async () => {
      const setup = await pixelmill(['setup'], mtlsEnv());
      expect(setup.stderr).toBe('');
      expect(setup.code).toBe(0);
      expect(setup.stdout).toContain(
        `pixelmill setup: on ${cluster.address} (namespace ${cluster.namespace}, TLS, client certificate):`,
      );
      expect(setup.stdout).toContain('created search attributes');

      const emulator = await startTestEmulator(FAST_EMULATOR);
      const worker = spawn(process.execPath, [CLI, 'worker'], {
        cwd: dir,
        env: {
          ...baseEnv,
          ...mtlsEnv(),
          PIXELMILL_API_BASE_URL: emulator.url,
          PIXELMILL_API_KEY: DEMO_API_KEY,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      worker.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      worker.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const exited = new Promise((resolve) => worker.once('exit', resolve));
      try {
        await waitUntil(
          'the worker to connect over mTLS',
          () => {
            if (worker.exitCode !== null) throw new Error(`pixelmill worker exited:\n${output}`);
            return output.includes('pixelmill worker connected');
          },
          60_000,
        );
        expect(output).toContain(
          `connected to ${cluster.address} (namespace ${cluster.namespace}, TLS, client certificate)`,
        );
      } finally {
        if (worker.exitCode === null) worker.kill('SIGTERM');
        await exited;
      }
    }, 120_000);

    it('`list` connects through a TEMPORAL_PROFILE of a temporal.toml with the certificate paths', async () => {
      const configFile = join(dir, 'temporal.toml');
      writeFileSync(
        configFile,
        [
          '[profile.cluster]',
          `address = "${cluster.address}"`,
          `namespace = "${cluster.namespace}"`,
          '[profile.cluster.tls]',
          'server_name = "localhost"',
          `server_ca_cert_path = "${certs.caFile}"`,
          `client_cert_path = "${certs.clientCertFile}"`,
          `client_key_path = "${certs.clientKeyFile}"`,
          '',
        ].join('\n'),
      );
      const listed = await pixelmill(['list'], {
        TEMPORAL_CONFIG_FILE: configFile,
        TEMPORAL_PROFILE: 'cluster',
      });
      expect(listed.stderr).toBe('');
      expect(listed.code).toBe(0);
      expect(listed.stdout).toBe(
        `pixelmill: no runs on ${cluster.address} (namespace ${cluster.namespace}, TLS, client certificate)\n`,
      );
    }, 60_000);

    it('without the client certificate, or without the CA, the connection is refused in one line that names the fix', async () => {
      const {
        TEMPORAL_TLS_CLIENT_CERT_PATH: _cert,
        TEMPORAL_TLS_CLIENT_KEY_PATH: _key,
        ...withoutCert
      } = mtlsEnv();
      const refused = await pixelmill(['list'], withoutCert);
      expect(refused.code).toBe(1);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toBe(
        `pixelmill: cannot connect to Temporal at ${cluster.address} (namespace ${cluster.namespace}, TLS): ` +
          'the server requires a client certificate (ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED): set ' +
          "TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH (or a profile's tls.client_cert_path and tls.client_key_path)\n",
      );

      const { TEMPORAL_TLS_SERVER_CA_CERT_PATH: _ca, ...withoutCa } = mtlsEnv();
      const untrusted = await pixelmill(['list'], withoutCa);
      expect(untrusted.code).toBe(1);
      expect(untrusted.stderr).toMatch(
        /^pixelmill: cannot connect to Temporal at \S+ \(namespace \S+, TLS, client certificate\): the server's certificate is not trusted \(\w+\): set TEMPORAL_TLS_SERVER_CA_CERT_PATH to its CA\n$/,
      );

      // The same refusal reaches a worker (the SDK's Rust core connects it).
      const worker = await pixelmill(['worker'], {
        ...withoutCert,
        PIXELMILL_API_BASE_URL: 'http://127.0.0.1:9',
        PIXELMILL_API_KEY: DEMO_API_KEY,
      });
      expect(worker.code).toBe(1);
      expect(worker.stderr.trimEnd().split('\n').at(-1)).toMatch(
        /: the server requires a client certificate/,
      );
    }, 90_000);
  },
);
