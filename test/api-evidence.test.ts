// The rule that tells a submit the API refuses for its own sake from an outage or a flaky
// stretch (activities/api-evidence.ts), without a server: the decision runs in a mock activity.
import { describe, expect, it } from 'vitest';
import { BadRequestError, RateLimitError, ServerError } from '../api/index.js';
import {
  ALONE_SUBMIT_TRIES,
  ApiEvidence,
  MIN_SUBMIT_TRIES,
  retryDelayAfter,
  submitFailure,
  triesToRefuse,
} from '../activities/api-evidence.js';
import { inActivity } from './activities-fixture.js';

describe('triesToRefuse', () => {
  it('never blames an item while no other submit is accepted (an outage)', () => {
    expect(triesToRefuse(0, 0)).toBe(Infinity);
    expect(triesToRefuse(0, 500)).toBe(Infinity);
  });

  it('takes the minimum when the others are mostly accepted', () => {
    expect(triesToRefuse(1_000, 0)).toBe(MIN_SUBMIT_TRIES);
    // The chaos suite's 5% of server errors.
    expect(triesToRefuse(950, 50)).toBe(MIN_SUBMIT_TRIES);
  });

  it('takes more tries the fewer answers it has, and the more the API fails others', () => {
    expect(triesToRefuse(7, 0)).toBe(7);
    expect(triesToRefuse(1, 0)).toBe(13);
    expect(triesToRefuse(500, 500)).toBe(20);
    expect(triesToRefuse(100, 900)).toBeGreaterThan(100);
    expect(triesToRefuse(100, 400)).toBeGreaterThan(triesToRefuse(100, 100));
  });
});

describe('retryDelayAfter', () => {
  it('doubles with the failures, from 1 s to at most a minute', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 30].map(retryDelayAfter)).toEqual([
      1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000,
    ]);
  });
});

describe('ApiEvidence', () => {
  const details = { endpoint: 'submit', httpStatus: 500 };
  const failure = () => new ServerError('boom', details);

  it("counts the other submits' outcomes since a moment, not the submit's own", () => {
    let now = 0;
    const evidence = new ApiEvidence(() => now);
    evidence.succeeded('submit', 'a');
    now = 10;
    evidence.failed('submit', failure(), 'mine');
    evidence.succeeded('submit', 'b');
    evidence.failed('submit', failure(), 'c');
    evidence.failed('query', failure(), 'lookup');
    now = 20;
    evidence.succeeded('submit', 'd');
    expect(evidence.submitsSince(10, 'mine')).toEqual({ accepted: 2, failed: 1 });
    expect(evidence.submitsSince(15, 'mine')).toEqual({ accepted: 1, failed: 0 });
    expect(evidence.submitsSince(0, 'b')).toEqual({ accepted: 2, failed: 2 });
  });

  it('counts every attempt of the other submits, a submit failing again and again included', () => {
    const evidence = new ApiEvidence(() => 0);
    for (let k = 0; k < 6; k++) evidence.failed('submit', failure(), 'poisoned-too');
    evidence.succeeded('submit', 'a');
    expect(evidence.submitsSince(0, 'mine')).toEqual({ accepted: 1, failed: 6 });
  });

  it('ignores 429s and answers that are no API error: neither counts for or against', () => {
    const evidence = new ApiEvidence(() => 0);
    evidence.failed('submit', new Error('a bug'), 'x');
    evidence.failed('submit', new RateLimitError('slow down', { ...details, httpStatus: 429 }), 'x');
    evidence.failed('submit', new BadRequestError('bad size', { ...details, httpStatus: 400 }), 'x');
    expect(evidence.submitsSince(0, 'mine')).toEqual({ accepted: 0, failed: 0 });
  });
});

describe('submitFailure: when a submit is refused for its own sake', () => {
  const details = { endpoint: 'submit', httpStatus: 500, apiCode: 'build_request_failed' };
  const refusal = () => new ServerError('failed with 500 build_request_failed', details);
  const ME = { workflowExecution: { workflowId: 'pixelmill/c/shard-0001', runId: 'r' }, activityId: '9' };
  const earlier = (same: number, lastFailedAtMs: number) => ({
    answers: { '500 build_request_failed': same },
    lastFailedAtMs,
    others: { accepted: 0, failed: 0 },
    probeTaskId: 'task_01ABC',
  });

  /**
   * The decision on a submit's `same`-th identical failure. `heartbeatProbe`: the task its earlier
   * attempts carried (none: they ran where no submit had been accepted); `shardTaskId`: the
   * shard's latest; `probedTasks` collects what the probe looked up.
   */
  async function decide(
    evidence: ApiEvidence,
    same: number,
    probeAnswers = true,
    options: { heartbeatProbe?: string | undefined; shardTaskId?: string; probedTasks?: string[] } = {},
  ) {
    let probed = 0;
    const heartbeatProbe = 'heartbeatProbe' in options ? options.heartbeatProbe : 'task_01ABC';
    const { result } = inActivity(
      () =>
        submitFailure(
          refusal(),
          evidence,
          async (taskId) => {
            probed++;
            options.probedTasks?.push(taskId);
            if (!probeAnswers) throw new ServerError('down', { endpoint: 'lookup', httpStatus: 503 });
          },
          undefined,
          options.shardTaskId,
        ),
      undefined,
      {
        ...ME,
        attempt: same,
        scheduledTimestampMs: 0,
        heartbeatDetails: { ...earlier(same - 1, 1_000), probeTaskId: heartbeatProbe },
      },
    );
    const failure = (await result) as { type?: string; nonRetryable?: boolean };
    return { refused: failure.type === 'SubmitRefused' && failure.nonRetryable === true, probed };
  }

  it('fails the item once the others are accepted, around and since its last failure', async () => {
    const evidence = new ApiEvidence(() => 2_000); // after its last failure, at 1,000
    for (let k = 0; k < 50; k++) evidence.succeeded('submit', `other-${k}`);
    expect((await decide(evidence, MIN_SUBMIT_TRIES - 1)).refused).toBe(false);
    expect((await decide(evidence, MIN_SUBMIT_TRIES)).refused).toBe(true);
  });

  it('never while other submits fail and none is accepted, though lookups answer (submits down)', async () => {
    let now = 100;
    const evidence = new ApiEvidence(() => now);
    for (let k = 0; k < 50; k++) evidence.succeeded('submit', `before-${k}`);
    // From before its last failure (at 1,000) on, every other submit fails.
    now = 2_000;
    for (let k = 0; k < 10; k++) evidence.failed('submit', refusal(), `during-${k}`);
    const { refused, probed } = await decide(evidence, 40);
    expect(refused).toBe(false);
    expect(probed).toBe(0);
  });

  it("alone on a worker that has seen no submit accepted, probes the shard's latest task", async () => {
    // A worker started after the run's other submits, as after a SIGKILL: no task of its own, and
    // this submit's earlier attempts (on it) had none to carry either.
    const probedTasks: string[] = [];
    const noTask = { heartbeatProbe: undefined, probedTasks };
    const named = await decide(new ApiEvidence(), ALONE_SUBMIT_TRIES, true, {
      ...noTask,
      shardTaskId: 'task_shard_latest',
    });
    expect(named).toEqual({ refused: true, probed: 1 });
    expect(probedTasks).toEqual(['task_shard_latest']);
    // Nothing to probe with: never refused, the run would wait on it for ever.
    expect(await decide(new ApiEvidence(), ALONE_SUBMIT_TRIES, true, noTask)).toEqual({
      refused: false,
      probed: 0,
    });
  });

  it('alone, after ALONE_SUBMIT_TRIES while a lookup answers; never while it does not', async () => {
    expect((await decide(new ApiEvidence(), ALONE_SUBMIT_TRIES - 1)).refused).toBe(false);
    expect(await decide(new ApiEvidence(), ALONE_SUBMIT_TRIES)).toEqual({ refused: true, probed: 1 });
    expect((await decide(new ApiEvidence(), 100, false)).refused).toBe(false);
  });
});
