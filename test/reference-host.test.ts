// Where a worker tells the provider to fetch a local reference (references/host.ts): a presigned
// GET for an s3:// output, the same all hour long so that a retried submit's body (and so its
// Idempotency-Key) still matches; the public URL of a local output; the embedded server; else a
// non-retryable failure that says how to host them. URLs the manifest gave pass through.
import { ApplicationFailure } from '@temporalio/activity';
import { describe, expect, it } from 'vitest';
import { ReferenceHost } from '../references/host.js';
import { referenceUri } from '../references/reference-uri.js';

const SHA = 'a'.repeat(64);
const REF = referenceUri(SHA, 'png');
const HOUR = 3_600_000;
const env = { AWS_ACCESS_KEY_ID: 'AKTEST', AWS_SECRET_ACCESS_KEY: 'secret-test', AWS_REGION: 'us-east-1' };
const bucket = {
  outputDir: '/local/records',
  objectStore: { bucket: 'shop', prefix: 'cat', endpoint: 'http://127.0.0.1:9', forcePathStyle: true },
};

describe('ReferenceHost', () => {
  it('signs a GET of the object under the output prefix, the same within the hour and 3 hours long', async () => {
    let now = Date.UTC(2026, 10, 24, 15, 5);
    const host = new ReferenceHost({ env, now: () => now });
    const [first, given] = await host.urls(bucket, [REF, 'https://cdn.example.test/a.png']);
    expect(given).toBe('https://cdn.example.test/a.png');
    const url = new URL(first!);
    expect(url.pathname).toBe(`/shop/cat/.pixelmill/references/${SHA}.png`);
    expect(url.searchParams.get('X-Amz-Expires')).toBe('10800');
    expect(url.searchParams.get('X-Amz-Date')).toBe('20261124T150000Z');
    now += 50 * 60_000;
    expect(await host.urls(bucket, [REF])).toEqual([first]);
    now += HOUR;
    expect(await host.urls(bucket, [REF])).not.toEqual([first]);
    host.close();
  });

  it("gives a local output's public URL, then the environment's, then the embedded server's", async () => {
    const server = { urlFor: (stateDir: string, file: string) => `http://127.0.0.1:1/${stateDir}/${file}` };
    const local = { outputDir: '/out' };
    const host = (more: NodeJS.ProcessEnv, withServer: boolean) =>
      new ReferenceHost({
        env: more,
        now: Date.now,
        ...(withServer ? { server: server as never } : {}),
      });
    expect(await host({}, true).urls({ ...local, publicUrl: 'https://refs.example.test/x/' }, [REF])).toEqual(
      [`https://refs.example.test/x/${SHA}.png`],
    );
    expect(
      await host({ PIXELMILL_PUBLIC_URL: 'https://tunnel.example.test' }, true).urls(local, [REF]),
    ).toEqual([`https://tunnel.example.test/${SHA}.png`]);
    expect(await host({}, true).urls(local, [REF])).toEqual([
      `http://127.0.0.1:1//out/.pixelmill/${SHA}.png`,
    ]);
    const failure = await host({}, false)
      .urls(local, [REF])
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({ type: 'ReferencesUnhosted', nonRetryable: true });
    expect((failure as Error).message).toMatch(/use an s3:\/\/ output, set output\.public_url/);
  });
});
