// When a shard asks a provider that answers one task per call (fal, BFL) about each of its tasks.
// Every such call is a request against the provider's limits, so each task is asked first when it
// has probably finished (a high quantile of the generation times the shard has seen), then again
// at a spacing set by how spread those times are, doubling while it stays unfinished. Without
// samples yet, the first tasks are asked from the shortest interval up, doubling, which finds the
// generation time in a few calls. Where finished tasks are pushed (webhooks, status streams), a
// call only catches a lost push: each task is asked once well past when its push should have come,
// then twice as long each time, up to the longest interval.
// Pure functions of workflow time, unit-tested without a server (test/single-checks.test.ts).

/** The share of tasks the first call should find finished: fewer calls per task, at a little latency. */
export const FIRST_CHECK_QUANTILE = 0.7;
/**
 * Where the submits themselves ask the provider for slots (concurrency-cap.ts, `polled`), a call
 * about a task only collects its result: the first comes when nearly every task has finished.
 */
export const COLLECTING_FIRST_CHECK_QUANTILE = 0.97;
/** Tasks whose check falls due within this share of the first wait are asked together (fewer activities). */
export const DUE_WINDOW_SHARE = 0.1;

export interface CheckBounds {
  /** The shortest wait between two calls about one task, and the longest. */
  minMs: number;
  maxMs: number;
  webhooks: boolean;
  /** The share of tasks the first call should find finished (default FIRST_CHECK_QUANTILE). */
  firstQuantile?: number;
}

export interface CheckPlan {
  /** From submit to the first call. */
  firstMs: number;
  /** After the `checks`-th call found the task unfinished, the wait until the next. */
  againMs(checks: number): number;
}

/** The value below which `share` of `sorted` lies. */
export function quantile(sorted: readonly number[], share: number): number {
  const at = Math.min(sorted.length - 1, Math.max(0, Math.ceil(share * sorted.length) - 1));
  return sorted[at]!;
}

/**
 * Without webhooks, a call about one task may come this share of the shortest lookup interval
 * after the last: each is one call, and a task waits for the call that finds it finished, its
 * slot idle where the provider limits tasks at once (bench/providers.ts).
 */
export const SINGLE_MIN_SHARE = 0.25;

const clamp = (value: number, bounds: CheckBounds): number =>
  Math.round(Math.min(bounds.maxMs, Math.max(floorOf(bounds), value)));

function floorOf(bounds: CheckBounds): number {
  return bounds.webhooks ? bounds.minMs : bounds.minMs * SINGLE_MIN_SHARE;
}

/** How a shard times its calls, from the generation times it has seen (ms, any order). */
export function checkPlan(samples: readonly number[], bounds: CheckBounds): CheckPlan {
  const doubling = (from: number) => (checks: number) => clamp(from * 2 ** Math.max(0, checks - 1), bounds);
  if (samples.length === 0) {
    if (bounds.webhooks) return { firstMs: bounds.maxMs, againMs: () => bounds.maxMs };
    return { firstMs: floorOf(bounds), againMs: doubling(floorOf(bounds)) };
  }
  const sorted = [...samples].sort((a, b) => a - b);
  if (bounds.webhooks) {
    // A push that is late is likely lost: asked again sooner, then at the longest interval.
    const firstMs = clamp(2 * quantile(sorted, 0.95) + bounds.minMs, bounds);
    return { firstMs, againMs: doubling(firstMs) };
  }
  const first = quantile(sorted, bounds.firstQuantile ?? FIRST_CHECK_QUANTILE);
  const spread = quantile(sorted, 0.95) - first;
  return { firstMs: clamp(first, bounds), againMs: doubling(Math.max(floorOf(bounds), spread / 2)) };
}

/** One task still at the provider, as the shard knows it. */
export interface CheckedTask {
  index: number;
  submittedAtMs: number;
  /** Calls made about it since its submit. */
  checks: number;
  /** When the last of them was answered. */
  lastCheckAtMs: number | undefined;
}

/** When the next call about `task` is due. */
export function nextCheckAt(task: CheckedTask, plan: CheckPlan): number {
  if (task.checks === 0 || task.lastCheckAtMs === undefined) return task.submittedAtMs + plan.firstMs;
  return task.lastCheckAtMs + plan.againMs(task.checks);
}

/**
 * The tasks to ask now (due now or within the due window, earliest first, at most `max`) and when
 * the next of the others falls due (Infinity when none is left).
 */
export function dueChecks(
  tasks: readonly CheckedTask[],
  nowMs: number,
  plan: CheckPlan,
  max: number,
): { due: number[]; nextAtMs: number } {
  const windowMs = Math.round(plan.firstMs * DUE_WINDOW_SHARE);
  const timed = tasks
    .map((task) => ({ index: task.index, at: nextCheckAt(task, plan) }))
    .sort((a, b) => a.at - b.at);
  const due: number[] = [];
  let nextAtMs = Number.POSITIVE_INFINITY;
  for (const { index, at } of timed) {
    const include = due.length < max && at <= nowMs + (due.length > 0 ? windowMs : 0);
    if (!include) {
      nextAtMs = at;
      break;
    }
    due.push(index);
  }
  return { due, nextAtMs };
}
