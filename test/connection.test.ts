// Choosing the cluster through Temporal's envconfig: the env vars and temporal.toml profiles a
// remote cluster (Temporal Cloud included) is configured with, exercised against a real local dev
// server; "embedded" when nothing names an address; the API key never shown.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UserError } from '../common/errors.js';
import {
  connectClient,
  connectWorkerConnection,
  devServerEndpoint,
  resolveTemporalTarget,
  type TemporalTarget,
} from '../temporal/connection.js';
import { startDevServerEnv } from './support/temporal.js';

let env: TestWorkflowEnvironment;
// A HOME without a temporal.toml, so that this machine's own Temporal config cannot leak in.
let home: string;

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'pixelmill-connection-'));
  env = await startDevServerEnv();
});

afterAll(async () => {
  await env?.teardown();
  rmSync(home, { recursive: true, force: true });
});

function external(target: TemporalTarget) {
  if (target.mode !== 'external') throw new Error(`expected an external target, got ${target.mode}`);
  return target;
}

describe('resolveTemporalTarget', () => {
  it('is embedded when no address is configured anywhere', async () => {
    expect(
      await resolveTemporalTarget({ HOME: home, TEMPORAL_NAMESPACE: 'ignored-without-address' }),
    ).toEqual({
      mode: 'embedded',
    });
  });

  it('connects through TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE, as a remote cluster would be', async () => {
    const target = external(
      await resolveTemporalTarget({
        HOME: home,
        TEMPORAL_ADDRESS: env.address,
        TEMPORAL_NAMESPACE: 'default',
      }),
    );
    expect(target.connection.address).toBe(env.address);
    expect(target.namespace).toBe('default');
    expect(target.display).toBe(`${env.address} (namespace default)`);

    const { client, close } = await connectClient(target);
    try {
      const workflowId = `connection-${Date.now()}`;
      await client.workflow.start('notRegisteredAnywhere', { taskQueue: 'nobody-polls', workflowId });
      let found: string[] = [];
      for (let attempt = 0; attempt < 50 && !found.includes(workflowId); attempt++) {
        found = [];
        for await (const execution of client.workflow.list()) found.push(execution.workflowId);
        if (!found.includes(workflowId)) await sleep(200);
      }
      expect(found).toContain(workflowId);
    } finally {
      await close();
    }

    const native = await connectWorkerConnection(target);
    await native.close();
  });

  it('reads a named profile from the config file, and env vars override it', async () => {
    const configFile = join(home, 'temporal.toml');
    writeFileSync(
      configFile,
      `[profile.staging]\naddress = "${env.address}"\nnamespace = "staging-ns"\n\n[profile.default]\naddress = "unused:7233"\n`,
    );
    const base = { HOME: home, TEMPORAL_CONFIG_FILE: configFile, TEMPORAL_PROFILE: 'staging' };
    const staging = external(await resolveTemporalTarget(base));
    expect(staging).toMatchObject({ connection: { address: env.address }, namespace: 'staging-ns' });
    const overridden = external(await resolveTemporalTarget({ ...base, TEMPORAL_NAMESPACE: 'from-env' }));
    expect(overridden.namespace).toBe('from-env');

    const missing = resolveTemporalTarget({ ...base, TEMPORAL_PROFILE: 'nope' });
    await expect(missing).rejects.toBeInstanceOf(UserError);
    await expect(missing).rejects.toThrow(/Temporal connection settings.*Profile 'nope' not found/);
  });

  it('describes TLS and an API key without ever showing the key', async () => {
    const secret = 'tmprl-secret-key-0123456789';
    const target = external(
      await resolveTemporalTarget({
        HOME: home,
        TEMPORAL_ADDRESS: 'my-ns.a1b2c.tmprl.cloud:7233',
        TEMPORAL_NAMESPACE: 'my-ns.a1b2c',
        TEMPORAL_API_KEY: secret,
      }),
    );
    expect(target.connection).toMatchObject({ apiKey: secret, tls: true });
    expect(target.display).toBe('my-ns.a1b2c.tmprl.cloud:7233 (namespace my-ns.a1b2c, TLS, API key)');
    expect(target.display).not.toContain(secret);

    const noTls = external(
      await resolveTemporalTarget({ HOME: home, TEMPORAL_ADDRESS: env.address, TEMPORAL_TLS: 'false' }),
    );
    expect(noTls.display).toBe(`${env.address} (namespace default)`);
  });

  it('fails to connect with a one-line error that names the cluster but not the key', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const secret = 'tmprl-secret-key-unreachable';
    const target = external(
      await resolveTemporalTarget({
        HOME: home,
        TEMPORAL_ADDRESS: `127.0.0.1:${port}`,
        TEMPORAL_API_KEY: secret,
      }),
    );
    const error: unknown = await connectClient(target).then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(UserError);
    const message = (error as UserError).message;
    expect(message).toMatch(
      new RegExp(
        `^cannot connect to Temporal at 127\\.0\\.0\\.1:${port} \\(namespace default, TLS, API key\\): `,
      ),
    );
    expect(message).not.toContain(secret);
    expect(message).not.toContain('\n');
  });

  it('names a local dev server with its Web UI', () => {
    const endpoint = devServerEndpoint({
      address: '127.0.0.1:7233',
      namespace: 'default',
      uiUrl: 'http://localhost:8233',
    });
    expect(endpoint).toEqual({
      connection: { address: '127.0.0.1:7233' },
      namespace: 'default',
      display: '127.0.0.1:7233 (local dev server, namespace default, Web UI http://localhost:8233)',
    });
  });
});
