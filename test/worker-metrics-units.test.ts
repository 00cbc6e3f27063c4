// pixelmill's worker metrics without a server: what each call, rate and outcome line records on
// the meter (a recording fake), that an activity retried on the same worker counts its items once,
// and that labels stay bounded.
import { noopMetricMeter, type MetricMeter, type MetricTags } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { NetworkError, RateLimitError, ServerError, TimeoutError } from '../api/index.js';
import type { PlanRef } from '../common/types.js';
import { countingOutcomes } from '../metrics/outcome-counts.js';
import { bindAddress } from '../metrics/serve.js';
import { callStatus, WorkerMetrics } from '../metrics/worker-metrics.js';
import type { OutcomeLine, RunStateStore } from '../runstate/index.js';

interface Recorded {
  name: string;
  value: number;
  tags: MetricTags;
}

/** A meter that keeps every add and set, with its tags. */
function recordingMeter(): { meter: MetricMeter; recorded: Recorded[] } {
  const recorded: Recorded[] = [];
  const metric = (name: string) => ({
    name,
    unit: undefined,
    description: undefined,
    kind: 'counter' as const,
    valueType: 'int' as const,
    add: (value: number, tags: MetricTags = {}) => void recorded.push({ name, value, tags }),
    set: (value: number, tags: MetricTags = {}) => void recorded.push({ name, value, tags }),
    withTags: () => metric(name),
  });
  const meter = {
    ...noopMetricMeter,
    createCounter: (name: string) => metric(name),
    createGauge: (name: string) => metric(name),
  } as unknown as MetricMeter;
  return { meter, recorded };
}

const total = (recorded: Recorded[], name: string, tags: MetricTags = {}): number =>
  recorded
    .filter((entry) => entry.name === name)
    .filter((entry) => Object.entries(tags).every(([key, value]) => entry.tags[key] === value))
    .reduce((sum, entry) => sum + entry.value, 0);

const line = (
  index: number,
  status: OutcomeLine['status'],
  more: Partial<OutcomeLine> = {},
): OutcomeLine => ({
  index,
  id: `item-${index}`,
  status,
  task_id: `task-${index}`,
  attempts: 1,
  credits_cost: 1,
  images:
    status === 'completed'
      ? [
          {
            path: `out/${index}.png`,
            sha256: 'x',
            bytes: 1000 + index,
            source_url: 'https://results.example/secret',
          },
        ]
      : [],
  error: null,
  ...more,
});

describe('WorkerMetrics', () => {
  it('names how a call was answered with bounded words', () => {
    const details = { endpoint: 'POST /v1/images/generations' };
    expect(callStatus(undefined)).toBe('ok');
    expect(callStatus(new RateLimitError('slow down', { ...details, httpStatus: 429 }))).toBe('429');
    expect(callStatus(new ServerError('oops', { ...details, httpStatus: 503 }))).toBe('503');
    expect(callStatus(new TimeoutError('late', details))).toBe('timeout');
    expect(callStatus(new NetworkError('reset', details))).toBe('network');
    expect(callStatus(new Error('anything'))).toBe('error');
  });

  it('counts a call by group and status, and a 429 by the limit it was over', () => {
    const { meter, recorded } = recordingMeter();
    const metrics = new WorkerMetrics(meter);
    metrics.apiCall('submit', 'fal');
    metrics.apiCall(
      'submit',
      'fal',
      new RateLimitError('busy', { endpoint: 'x', httpStatus: 429, limit: 'concurrency' }),
    );
    metrics.apiCall('query', undefined, new NetworkError('reset', { endpoint: 'x' }));
    expect(recorded).toEqual([
      { name: 'pixelmill_api_calls', value: 1, tags: { provider: 'fal', group: 'submit', status: 'ok' } },
      { name: 'pixelmill_api_calls', value: 1, tags: { provider: 'fal', group: 'submit', status: '429' } },
      {
        name: 'pixelmill_api_rate_limited',
        value: 1,
        tags: { provider: 'fal', group: 'submit', limit: 'concurrency' },
      },
      {
        name: 'pixelmill_api_calls',
        value: 1,
        tags: { provider: 'apimart', group: 'query', status: 'network' },
      },
    ]);
  });

  it('counts outcome lines by state, reused apart, with their images, bytes and check failures', () => {
    const { meter, recorded } = recordingMeter();
    const checked = line(2, 'completed');
    checked.images[0]!.checks = [{ check: 'aspect_ratio', level: 'warn', message: 'square' }];
    new WorkerMetrics(meter).outcomes('apimart', [
      line(0, 'completed'),
      line(1, 'failed'),
      checked,
      line(3, 'completed', { reused_from: 'pixelmill/cat@run-1' }),
    ]);
    expect(total(recorded, 'pixelmill_items', { state: 'completed' })).toBe(2);
    expect(total(recorded, 'pixelmill_items', { state: 'failed' })).toBe(1);
    expect(total(recorded, 'pixelmill_items', { state: 'reused' })).toBe(1);
    // The reused item's image was stored by an earlier run.
    expect(total(recorded, 'pixelmill_images_stored')).toBe(2);
    expect(total(recorded, 'pixelmill_stored_bytes')).toBe(1000 + 1002);
    expect(total(recorded, 'pixelmill_check_failures', { check: 'aspect_ratio', level: 'warn' })).toBe(1);
    // One add per state, and no label names an item, a path or a URL.
    expect(recorded.filter((entry) => entry.name === 'pixelmill_items')).toHaveLength(3);
    for (const { tags } of recorded) expect(JSON.stringify(tags)).not.toMatch(/item-|out\/|https?:/);
  });

  it('never fails its caller when the runtime is gone', () => {
    const broken = {
      ...noopMetricMeter,
      createCounter: () => ({
        add: () => {
          throw new Error('runtime shut down');
        },
      }),
      createGauge: () => ({
        set: () => {
          throw new Error('runtime shut down');
        },
      }),
    } as unknown as MetricMeter;
    const metrics = new WorkerMetrics(broken);
    expect(() => metrics.apiCall('submit', 'apimart')).not.toThrow();
    expect(() => metrics.rateInForce('submit', 'apimart', 3)).not.toThrow();
    expect(() => metrics.outcomes('apimart', [line(0, 'completed')])).not.toThrow();
  });
});

describe('countingOutcomes', () => {
  const plan: PlanRef = { stateDir: '/out/.pixelmill', planHash: 'abc' };

  function counted() {
    const appended: OutcomeLine[][] = [];
    const store = {
      appendOutcomes: async (_ref: PlanRef, _shard: number, lines: readonly OutcomeLine[]) =>
        void appended.push([...lines]),
      readPlanMeta: async () => ({ provider: 'replicate' }),
      readOutcomes: async () => [],
    } as unknown as RunStateStore;
    const { meter, recorded } = recordingMeter();
    return { store: countingOutcomes(store, new WorkerMetrics(meter)), appended, recorded };
  }

  it('counts what a retried activity appends again under its sequence once, and its new lines', async () => {
    const { store, appended, recorded } = counted();
    await store.appendOutcomes(plan, 0, [line(0, 'completed'), line(1, 'completed')], 'seq-1');
    // The retry appends the first attempt's lines with its own.
    await store.appendOutcomes(
      plan,
      0,
      [line(0, 'completed'), line(1, 'completed'), line(2, 'expired')],
      'seq-1',
    );
    // Another activity of the shard, another sequence.
    await store.appendOutcomes(plan, 0, [line(3, 'failed')], 'seq-2');
    expect(appended).toHaveLength(3); // every append reaches the store
    expect(total(recorded, 'pixelmill_items', { state: 'completed', provider: 'replicate' })).toBe(2);
    expect(total(recorded, 'pixelmill_items', { state: 'expired' })).toBe(1);
    expect(total(recorded, 'pixelmill_items', { state: 'failed' })).toBe(1);
    expect(total(recorded, 'pixelmill_images_stored')).toBe(2);
  });

  it('counts nothing for an append the store refused, and passes every other method through', async () => {
    const { store } = counted();
    const { meter, recorded } = recordingMeter();
    const refusing = countingOutcomes(
      { ...store, appendOutcomes: async () => Promise.reject(new Error('bucket gone')) } as RunStateStore,
      new WorkerMetrics(meter),
    );
    await expect(refusing.appendOutcomes(plan, 0, [line(0, 'completed')], 's')).rejects.toThrow(
      'bucket gone',
    );
    expect(recorded).toEqual([]);
    await expect(store.readOutcomes(plan)).resolves.toEqual([]);
  });
});

describe('the metrics address', () => {
  it('puts an IPv6 host in brackets', () => {
    expect(bindAddress({ host: '0.0.0.0', port: 9464 })).toBe('0.0.0.0:9464');
    expect(bindAddress({ host: '::', port: 9464 })).toBe('[::]:9464');
    expect(bindAddress({ host: '[::1]', port: 9464 })).toBe('[::1]:9464');
  });
});
