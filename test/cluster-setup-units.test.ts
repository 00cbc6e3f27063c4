// `pixelmill setup` without a server: which attributes a namespace lacks or has with another type,
// what counts as Temporal Cloud, and the lines it prints for Cloud. The command and the TLS
// diagnosis against a real cluster are in cluster.test.ts.
import { describe, expect, it } from 'vitest';
import { checkAttributes, cloudInstructions, isTemporalCloud } from '../client/commands/setup.js';
import { PIXELMILL_SEARCH_ATTRIBUTES } from '../common/search-attributes.js';
import { INDEXED_VALUE_TYPES } from '../temporal/server-admin.js';
import { diagnoseTls } from '../temporal/tls-diagnosis.js';
import { freePort } from '../temporal/dev-server-process.js';

const all = Object.fromEntries(
  PIXELMILL_SEARCH_ATTRIBUTES.map(({ name, type }) => [name, INDEXED_VALUE_TYPES[type]]),
);

describe('checkAttributes', () => {
  it('a fresh namespace lacks all five; a set-up one has them; other attributes are left alone', () => {
    expect(checkAttributes({ CustomerId: 2 })).toEqual({
      missing: [...PIXELMILL_SEARCH_ATTRIBUTES],
      present: [],
      conflicts: [],
    });
    expect(checkAttributes({ ...all, CustomerId: 2 })).toEqual({
      missing: [],
      present: [...PIXELMILL_SEARCH_ATTRIBUTES],
      conflicts: [],
    });
  });

  it('an attribute registered with another type is a conflict, named with both types', () => {
    const check = checkAttributes({ ...all, PixelmillCredits: INDEXED_VALUE_TYPES.Int, PixelmillItems: 99 });
    expect(check.conflicts).toEqual([
      { name: 'PixelmillItems', wanted: 'Int', actual: 'type 99' },
      { name: 'PixelmillCredits', wanted: 'Double', actual: 'Int' },
    ]);
    expect(check.present.map(({ name }) => name)).toEqual([
      'PixelmillManifest',
      'PixelmillCompleted',
      'PixelmillFailed',
    ]);
  });
});

describe('isTemporalCloud', () => {
  it.each([
    ['my-ns.a1b2c.tmprl.cloud:7233', undefined, true],
    ['MY-NS.A1B2C.TMPRL.CLOUD:7233', undefined, true],
    ['us-east-1.aws.api.temporal.io:7233', undefined, true],
    ['temporal.internal:7233', 'a-key', true],
    ['temporal.internal:7233', undefined, false],
    ['tmprl.cloud.example.com:7233', undefined, false],
    ['127.0.0.1:7233', undefined, false],
  ])('%s with key %s: %s', (address, apiKey, cloud) => {
    expect(isTemporalCloud({ connection: { address, ...(apiKey ? { apiKey } : {}) } })).toBe(cloud);
  });
});

describe('cloudInstructions', () => {
  it('one tcld command per missing attribute, then the Cloud UI page', () => {
    expect(cloudInstructions('catalog.a1b2c', PIXELMILL_SEARCH_ATTRIBUTES.slice(0, 2))).toEqual([
      'tcld namespace search-attributes add --namespace catalog.a1b2c --search-attribute PixelmillManifest=Keyword',
      'tcld namespace search-attributes add --namespace catalog.a1b2c --search-attribute PixelmillItems=Int',
      'or in the Cloud UI: https://cloud.temporal.io/namespaces/catalog.a1b2c, Edit, Custom Search Attributes',
    ]);
  });
});

describe('diagnoseTls', () => {
  it('says nothing of a port where nothing listens (the SDK reason stands)', async () => {
    const port = await freePort();
    expect(await diagnoseTls(`127.0.0.1:${port}`, true)).toBeUndefined();
    expect(await diagnoseTls(`127.0.0.1:${port}`, undefined)).toBeUndefined();
  });
});
