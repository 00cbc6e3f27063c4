import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RunCheck } from '../workflows/run-check.js';

describe("a shard's check that its run is there", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  /** A signal to the run answered after `ms`, or refused with `error`. */
  const tellRunAfter = (ms: number, error?: Error) => () =>
    new Promise<void>((resolve, reject) => setTimeout(() => (error ? reject(error) : resolve()), ms));

  it('is due a period after the last check was answered, however long the answer took', async () => {
    const check = new RunCheck(tellRunAfter(100), 40);
    expect(check.due()).toBe(false);
    vi.advanceTimersByTime(40);
    expect(check.due()).toBe(true);
    const answered = check.check();
    await vi.advanceTimersByTimeAsync(100);
    expect(await answered).toBe(true);
    // A signal slower than the period: the shard submits before it checks again.
    expect(check.due()).toBe(false);
    vi.advanceTimersByTime(39);
    expect(check.due()).toBe(false);
    vi.advanceTimersByTime(1);
    expect(check.due()).toBe(true);
  });

  it('finds the run gone when the signal is refused as not found, and from then on', async () => {
    const check = new RunCheck(tellRunAfter(5, new Error('workflow execution not found')), 40);
    const answered = check.check();
    await vi.advanceTimersByTimeAsync(5);
    expect(await answered).toBe(false);
    expect(await check.check()).toBe(false);
    vi.advanceTimersByTime(1_000);
    expect(check.due()).toBe(false);
  });

  it('takes any other refusal as the run still there', async () => {
    const check = new RunCheck(tellRunAfter(5, new Error('too many signals')), 40);
    const answered = check.check();
    await vi.advanceTimersByTimeAsync(5);
    expect(await answered).toBe(true);
  });
});
