// The shared job simulator (emulator/core): futures drawn at submit, per-account concurrency
// lanes (FIFO, never refused), queue positions, cancel, start deadlines, limit changes, stuck
// jobs, retention, peak concurrency and the journal a restarted emulator replays. A manual clock
// moves time; every expectation is an exact schedule computed by hand.
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { JobSimulator, type Job, type JobRequest } from '../emulator/core/index.js';
import { randomStream } from '../emulator/core/random-streams.js';
import { ManualClock } from './support/emulator.js';
import { removeTempDirs, tempDir } from './support/temp-dir.js';

afterAll(removeTempDirs);

const T0 = 1_000_000;
const S = 1000;

function setup(
  options: {
    concurrency?: number;
    byAccount?: Record<string, number>;
    journalFile?: string;
    timeScale?: number;
  } = {},
) {
  const clock = new ManualClock(T0);
  const sim = new JobSimulator<{ n: number }>({
    clock,
    timeScale: options.timeScale ?? 1,
    random: randomStream(7, 0),
    ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
    ...(options.byAccount ? { concurrencyByAccount: options.byAccount } : {}),
    journalFile: options.journalFile ?? null,
  });
  let next = 0;
  const submit = (overrides: Partial<JobRequest<{ n: number }>> = {}): Job<{ n: number }> =>
    sim.submit({
      id: `job-${next}`,
      account: 'a',
      queueSeconds: [0, 0],
      runSeconds: [10, 10],
      failureRate: 0,
      stuckRate: 0,
      moderated: false,
      retentionSeconds: 3600,
      data: { n: next++ },
      ...overrides,
    });
  return { clock, sim, submit };
}

const starts = (jobs: Job[]) =>
  jobs.map((job) => (job.startsAt === Infinity ? null : (job.startsAt - T0) / S));
const ends = (jobs: Job[]) => jobs.map((job) => (job.endsAt === Infinity ? null : (job.endsAt - T0) / S));

describe('concurrency lanes', () => {
  it('runs at most the limit at once, the rest wait first in first out, and nothing is refused', () => {
    const { clock, sim, submit } = setup({ concurrency: 2 });
    const jobs = Array.from({ length: 5 }, () => submit());
    expect(starts(jobs)).toEqual([0, 0, 10, 10, 20]);
    expect(ends(jobs)).toEqual([10, 10, 20, 20, 30]);
    expect(jobs.map((job) => job.phaseAt(clock.now()))).toEqual([
      'running',
      'running',
      'queued',
      'queued',
      'queued',
    ]);
    expect(jobs.slice(2).map((job) => sim.queuePosition(job))).toEqual([0, 1, 2]);
    clock.advance(10 * S);
    expect(jobs.map((job) => job.phaseAt(clock.now()))).toEqual([
      'succeeded',
      'succeeded',
      'running',
      'running',
      'queued',
    ]);
    expect(sim.queuePosition(jobs[4]!)).toBe(0);
    expect(sim.runningCount('a')).toBe(2);
    expect(sim.activeCount('a')).toBe(3);
    clock.advance(30 * S);
    expect(sim.peakRunning('a')).toBe(2);
    expect(sim.countByPhase()).toMatchObject({ succeeded: 5, queued: 0, running: 0 });
  });

  it('keeps a lane per account and applies per-account limits over the default', () => {
    const { sim, submit } = setup({ concurrency: 1, byAccount: { b: 3 } });
    const a = [submit(), submit()];
    const b = [submit({ account: 'b' }), submit({ account: 'b' }), submit({ account: 'b' })];
    expect(starts(a)).toEqual([0, 10]);
    expect(starts(b)).toEqual([0, 0, 0]);
    expect(sim.limitOf('a')).toBe(1);
    expect(sim.limitOf('b')).toBe(3);
    expect(sim.peakRunning()).toBe(4);
  });

  it('starts every job when its dispatch delay is over when there is no limit', () => {
    const { submit } = setup();
    const jobs = [submit({ queueSeconds: [3, 3] }), submit({ queueSeconds: [1, 1] }), submit()];
    // FIFO still holds: a job ready earlier never starts before one submitted before it.
    expect(starts(jobs)).toEqual([3, 3, 3]);
  });

  it('never lets a later job overtake an earlier one that is not yet ready', () => {
    const { submit } = setup({ concurrency: 2 });
    const jobs = [submit({ queueSeconds: [5, 5] }), submit({ queueSeconds: [0, 0] })];
    expect(starts(jobs)).toEqual([5, 5]);
  });
});

describe('cancel', () => {
  it('removes a queued job from the queue: it never runs and the jobs behind it move up', () => {
    const { clock, sim, submit } = setup({ concurrency: 1 });
    const jobs = [submit(), submit(), submit()];
    const moved: string[] = [];
    sim.onReschedule = (changed) => moved.push(...changed.map((job) => job.id));
    clock.advance(2 * S);
    expect(sim.cancel(jobs[1]!)).toBe('cancelled_queued');
    expect(jobs[1]!.phaseAt(clock.now())).toBe('cancelled');
    expect(jobs[1]!.startsAt).toBe(Infinity);
    expect(starts(jobs)).toEqual([0, null, 10]);
    expect(moved).toEqual(['job-1', 'job-2']);
    expect(sim.queuePosition(jobs[2]!)).toBe(0);
  });

  it('ends a running job now and starts the next one in its slot', () => {
    const { clock, sim, submit } = setup({ concurrency: 1 });
    const jobs = [submit(), submit()];
    clock.advance(4 * S);
    expect(sim.cancel(jobs[0]!)).toBe('cancelled_running');
    expect(ends(jobs)).toEqual([4, 14]);
    expect(starts(jobs)).toEqual([0, 4]);
    expect(jobs[0]!.phaseAt(clock.now())).toBe('cancelled');
    expect(sim.cancel(jobs[0]!)).toBe('already_ended');
    clock.advance(20 * S);
    expect(sim.cancel(jobs[1]!)).toBe('already_ended');
    expect(jobs[1]!.outcome).toBe('succeeded');
  });
});

describe('start deadlines', () => {
  it('ends a job that cannot start in time timed_out at its deadline, without a slot', () => {
    const { clock, sim, submit } = setup({ concurrency: 1 });
    const jobs = [
      submit(),
      submit({ startTimeoutSeconds: 5 }),
      submit(),
      submit({ startTimeoutSeconds: 30 }),
    ];
    expect(starts(jobs)).toEqual([0, null, 10, 20]);
    expect(ends(jobs)).toEqual([10, 5, 20, 30]);
    expect(jobs[1]!.outcome).toBe('timed_out');
    expect(sim.queuePosition(jobs[2]!)).toBe(1);
    clock.advance(6 * S);
    expect(jobs[1]!.phaseAt(clock.now())).toBe('timed_out');
    expect(sim.queuePosition(jobs[2]!)).toBe(0);
  });

  it('starts it after all when a cancel frees a slot before its deadline', () => {
    const { clock, sim, submit } = setup({ concurrency: 1 });
    const jobs = [submit(), submit({ startTimeoutSeconds: 5 })];
    clock.advance(2 * S);
    sim.cancel(jobs[0]!);
    expect(starts(jobs)).toEqual([0, 2]);
    expect(jobs[1]!.outcome).toBe('succeeded');
  });
});

describe('limit changes', () => {
  it('starts queued jobs at once when the limit is raised', () => {
    const { clock, sim, submit } = setup({ concurrency: 1 });
    const jobs = [submit(), submit(), submit()];
    clock.advance(3 * S);
    sim.setLimit(null, 3);
    expect(starts(jobs)).toEqual([0, 3, 3]);
  });

  it('lets running jobs finish when it is lowered, and waits until fewer than the limit run', () => {
    const { clock, sim, submit } = setup({ concurrency: 3 });
    const jobs = [
      submit({ runSeconds: [10, 10] }),
      submit({ runSeconds: [20, 20] }),
      submit({ runSeconds: [30, 30] }),
      submit(),
    ];
    expect(starts(jobs)).toEqual([0, 0, 0, 10]);
    clock.advance(1 * S);
    sim.setLimit('a', 1);
    expect(starts(jobs)).toEqual([0, 0, 0, 30]);
    sim.setLimit('a', null);
    expect(sim.limitOf('a')).toBe(3);
    expect(starts(jobs)).toEqual([0, 0, 0, 10]);
  });
});

describe('outcomes, retention and time', () => {
  it('draws failures and stuck jobs by rate, and takes moderation from the provider', () => {
    const { clock, submit } = setup();
    const failed = submit({ failureRate: 1 });
    const moderated = submit({ moderated: true, failureRate: 1 });
    const stuck = submit({ stuckRate: 1, moderated: true });
    clock.advance(11 * S);
    expect([failed, moderated, stuck].map((job) => job.phaseAt(clock.now()))).toEqual([
      'failed',
      'moderated',
      'running',
    ]);
    expect(stuck.endsAt).toBe(Infinity);
  });

  it('keeps a stuck job in its slot until it is cancelled', () => {
    const { clock, sim, submit } = setup({ concurrency: 1 });
    const jobs = [submit({ stuckRate: 1 }), submit()];
    expect(starts(jobs)).toEqual([0, null]);
    clock.advance(100 * S);
    expect(jobs[1]!.phaseAt(clock.now())).toBe('queued');
    sim.cancel(jobs[0]!);
    expect(starts(jobs)).toEqual([0, 100]);
    expect(jobs[0]!.phaseAt(clock.now())).toBe('cancelled');
  });

  it('deletes a result its retention after the job ended', () => {
    const { clock, sim, submit } = setup();
    const job = submit({ retentionSeconds: 60 });
    clock.advance(69_999);
    expect(job.phaseAt(clock.now())).toBe('succeeded');
    clock.advance(1);
    expect(job.phaseAt(clock.now())).toBe('deleted');
    expect(sim.countByPhase().deleted).toBe(1);
  });

  it('scales every duration by time_scale', () => {
    const { submit } = setup({ timeScale: 0.01 });
    const job = submit({ queueSeconds: [2, 2], startTimeoutSeconds: 1, runSeconds: [10, 10] });
    expect(job.record.readyAt - T0).toBe(20);
    expect(job.record.startDeadline! - T0).toBe(10);
    expect(job.outcome).toBe('timed_out');
    const next = submit({ retentionSeconds: 60 });
    expect(next.record.runMs).toBe(100);
    expect(next.record.retentionMs).toBe(600);
  });

  it('draws the same futures for the same seed, whatever each job asks for', () => {
    const a = setup();
    const b = setup();
    const fromA = [a.submit({ runSeconds: [1, 100] }), a.submit({ runSeconds: [1, 100] })];
    const fromB = [b.submit({ runSeconds: [1, 100], moderated: true }), b.submit({ runSeconds: [1, 100] })];
    expect(fromA.map((job) => job.record.runMs)).toEqual(fromB.map((job) => job.record.runMs));
    expect(new Set(fromA.map((job) => job.record.runMs)).size).toBe(2);
  });
});

describe('journal', () => {
  it('lets a restarted simulator re-derive every timing from submits, cancels, limits and custom events', () => {
    const dir = tempDir();
    const journalFile = join(dir, 'state', 'fal.jsonl');
    const first = setup({ concurrency: 2, journalFile });
    const jobs = Array.from({ length: 6 }, () =>
      first.submit({ runSeconds: [5, 15], startTimeoutSeconds: 40 }),
    );
    first.clock.advance(3 * S);
    first.sim.cancel(jobs[1]!);
    first.sim.recordCustom('key_rotated', { keys: 2 });
    first.clock.advance(4 * S);
    first.sim.setLimit(null, 1);
    const later = first.submit({ queueSeconds: [1, 1] });
    const expected = [...jobs, later].map((job) => [job.id, job.startsAt, job.endsAt, job.outcome]);
    // A kill mid-write leaves a torn last line.
    appendFileSync(journalFile, '{"kind":"submit","at":');

    const second = setup({ concurrency: 2, journalFile });
    const custom: unknown[] = [];
    const restored = second.sim.restore((name, payload, at) => custom.push([name, payload, at - T0]));
    expect(restored).toHaveLength(7);
    expect(second.sim.values().map((job) => [job.id, job.startsAt, job.endsAt, job.outcome])).toEqual(
      expected,
    );
    expect(second.sim.limitOf('a')).toBe(1);
    expect(custom).toEqual([['key_rotated', { keys: 2 }, 3 * S]]);
    expect(second.sim.get('job-1')!.cancelledAt).toBe(T0 + 3 * S);
    expect(readFileSync(journalFile, 'utf8').endsWith('\n')).toBe(true);
  });
});
