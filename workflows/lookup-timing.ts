// When a shard's next batch lookup is due, from the ages of its tasks. A lookup is worth its call
// once about `target` tasks have finished; how many have is estimated from when each task was
// submitted and the generation times the shard has seen, so a lookup comes when tasks are due:
// at the start of a run, after a lull, in a tail. Pacing by the last lookup's yield alone made
// lookups bursty (its interval grew while few tasks finished and shrank only step by step), and a
// second in which the queries' group has no GET to make is rate limit lost for good.
// Pure functions: the shard workflow calls them with workflow time.

/** Generation times kept (the newest): enough for the shape of the distribution, small in history. */
export const GENERATION_SAMPLES = 64;

/** The resolution of the search for the due time. */
const STEP_MS = 100;

/**
 * The generation times a lookup at `atMs` teaches, for tasks it found finished that were submitted
 * at `submittedAtMs`: each finished between the previous lookup (or its submit, if later) and
 * this one, taken as the middle of that span. Appended to `samples`, keeping the newest.
 */
export function learnGenerationTimes(
  samples: readonly number[],
  submittedAtMs: readonly number[],
  previousLookupAtMs: number | undefined,
  atMs: number,
): number[] {
  const learned = submittedAtMs.map((submitted) => {
    const notBefore = Math.max(previousLookupAtMs ?? submitted, submitted);
    return Math.round((notBefore + atMs) / 2 - submitted);
  });
  return [...samples, ...learned].slice(-GENERATION_SAMPLES);
}

/** The share of `sorted` at most `ageMs`: the empirical distribution of generation times. */
export function finishedShare(sorted: readonly number[], ageMs: number): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (sorted[middle]! <= ageMs) low = middle + 1;
    else high = middle;
  }
  return low / sorted.length;
}

export interface DueLookup {
  nowMs: number;
  /** When each task still at the API (not known finished) was submitted. */
  submittedAtMs: readonly number[];
  /** The shard's last lookup: every task submitted before it was unfinished then. */
  lastLookupAtMs: number | undefined;
  /** Generation times seen (learnGenerationTimes). */
  samples: readonly number[];
  /** Finished tasks worth a lookup (lookupTarget). */
  target: number;
  minMs: number;
  maxMs: number;
}

/**
 * The wait until about `target` of the tasks have finished, between `minMs` and `maxMs`; undefined
 * without samples to go by. Each task counts with the chance that it has finished by then, given
 * that it had not at the last lookup; one older than every sample counts as finished.
 */
export function dueLookupDelay(due: DueLookup): number | undefined {
  if (due.samples.length === 0) return undefined;
  const sorted = [...due.samples].sort((a, b) => a - b);
  const tasks = due.submittedAtMs.map((submitted) => {
    const unfinishedThen =
      due.lastLookupAtMs === undefined || due.lastLookupAtMs <= submitted
        ? 0
        : finishedShare(sorted, due.lastLookupAtMs - submitted);
    return { submitted, unfinishedThen };
  });
  const expectedFinished = (atMs: number): number => {
    let sum = 0;
    for (const { submitted, unfinishedThen } of tasks) {
      if (unfinishedThen >= 1) sum++;
      else
        sum += Math.max(0, finishedShare(sorted, atMs - submitted) - unfinishedThen) / (1 - unfinishedThen);
    }
    return sum;
  };
  for (let waitMs = due.minMs; waitMs < due.maxMs; waitMs += STEP_MS) {
    if (expectedFinished(due.nowMs + waitMs) >= due.target) return waitMs;
  }
  return due.maxMs;
}
