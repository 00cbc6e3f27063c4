// The status streams a worker follows: a stream's end is signalled to the shard by the provider's
// task id, with the one call it cost; a broken stream is left to the shard's lookups, its call
// counted; a failed signal is swallowed; the number open is bounded; closing the worker ends them all.
import { describe, expect, it } from 'vitest';
import { StatusFollowers, type Followed } from '../activities/status-followers.js';
import type { TaskFinishedSignal } from '../common/types.js';
import type { ProviderClient, TaskState } from '../providers/types.js';
import { waitUntil } from './support/wait.js';

/** A client whose streams end when the test says, or never (until aborted). */
function streamingClient() {
  const ends = new Map<string, (state: TaskState) => void>();
  const fails = new Map<string, (error: Error) => void>();
  const client = {
    followStatus: (
      ref: string,
      options: { signal?: AbortSignal; onState?: (state: TaskState) => void } = {},
    ) =>
      new Promise<TaskState>((resolve, reject) => {
        // The stream's first event, at once: waiting behind two others.
        options.onState?.({ status: 'pending', queuePosition: 2 });
        ends.set(ref, (state) => {
          options.onState?.(state);
          resolve(state);
        });
        fails.set(ref, reject);
        options.signal?.addEventListener('abort', () => reject(options.signal!.reason));
      }),
  } as unknown as ProviderClient;
  return { client, ends, fails };
}

function followed(client: ProviderClient, ref: string, signals: [string, TaskFinishedSignal][]): Followed {
  return {
    client,
    ref,
    workflowId: 'shard-1',
    maxMs: 60_000,
    signal: async (workflowId, task) => {
      signals.push([workflowId, task]);
      return 'signalled';
    },
  };
}

describe('StatusFollowers', () => {
  it("signals a finished task to its shard by the provider's id, with the stream's call; of one not finished, the call only", async () => {
    const { client, ends } = streamingClient();
    const followers = new StatusFollowers();
    const signals: [string, TaskFinishedSignal][] = [];
    const first = followers.follow(followed(client, 'req-1|fal-ai/flux/requests/req-1', signals));
    expect(followers.follow(followed(client, 'req-2|fal-ai/flux/requests/req-2', signals))).toBeDefined();
    expect(followers.open).toBe(2);
    // The first state the stream told, for the submit whose answer said nothing of the queue.
    expect(await first?.first).toEqual({ status: 'pending', queuePosition: 2 });
    ends.get('req-1|fal-ai/flux/requests/req-1')!({ status: 'completed' });
    ends.get('req-2|fal-ai/flux/requests/req-2')!({ status: 'expired' });
    await waitUntil('0 streams open', () => followers.open === 0, 5_000, 5);
    expect(signals).toEqual([
      ['shard-1', { taskId: 'req-1', status: 'completed', lookupCalls: 1 }],
      ['shard-1', { taskId: 'req-2', status: 'expired', lookupCalls: 1, callOnly: true }],
    ]);
  });

  it('leaves a broken stream to the lookups with its call counted, holds no more than its bound open, and ends all on close', async () => {
    const { client, fails } = streamingClient();
    const followers = new StatusFollowers(2);
    const signals: [string, TaskFinishedSignal][] = [];
    expect(followers.follow(followed(client, 'a', signals))).toBeDefined();
    expect(followers.follow(followed(client, 'b', signals))).toBeDefined();
    expect(followers.follow(followed(client, 'c', signals))).toBeUndefined();
    fails.get('a')!(new Error('socket hang up'));
    await waitUntil('1 streams open', () => followers.open === 1, 5_000, 5);
    expect(followers.follow(followed(client, 'c', signals))).toBeDefined();
    followers.close();
    await waitUntil('0 streams open', () => followers.open === 0, 5_000, 5);
    expect(followers.follow(followed(client, 'd', signals))).toBeUndefined();
    // The streams the worker's close ended tell nothing: the shard's lookups have them.
    expect(signals).toEqual([['shard-1', { taskId: 'a', status: 'unknown', lookupCalls: 1, callOnly: true }]]);
  });

  it('a signal that fails is swallowed: the stream was a fast path only', async () => {
    const { client, ends } = streamingClient();
    const followers = new StatusFollowers();
    const failing: Followed = {
      ...followed(client, 'x', []),
      signal: () => Promise.reject(new Error('Temporal unavailable')),
    };
    followers.follow(failing);
    ends.get('x')!({ status: 'failed' });
    // A rejection that escaped would fail the test as unhandled.
    await waitUntil('0 streams open', () => followers.open === 0, 5_000, 5);
  });
});
