// A shard's tracking lane: learns which of its tasks have finished, the provider's way (its
// capabilities, in `limits.lookup`):
// - `batch` and `list`: one lookup activity for every task at the API, timed by the tasks' ages
//   (lookup-timing.ts) so that each finds about a lookup's worth of finished tasks; a `list`
//   provider's activity sweeps the tasks created since the oldest one asked;
// - `single`: one call per task, so each task is asked when it has probably finished
//   (single-checks.ts), a few lookups in flight at once.
// Finished tasks go to the collect lane, with their results when the answer carried them.
import { condition, log } from '@temporalio/workflow';
import type { LookupTasksOutput } from '../common/types.js';
import { plural } from '../common/words.js';
import { workLeft, type ShardContext } from './shard-context.js';
import { afterLookupQueue } from './concurrency-cap.js';
import { checkPlan, COLLECTING_FIRST_CHECK_QUANTILE, dueChecks, type CheckedTask } from './single-checks.js';
import { dueLookupDelay, learnGenerationTimes } from './lookup-timing.js';
import { finishesPushed, lookupTarget, nextPollDelay, Phase, pollBounds } from './tracking.js';

/** A `list` sweep starts this long before the oldest task asked: the provider's clock may differ. */
export const LIST_SKEW_MS = 60_000;
/** Tasks asked in one `single` lookup activity, and such activities in flight at once. */
export const SINGLE_LOOKUP_TASKS = 50;
export const SINGLE_LOOKUP_ACTIVITIES_AT_ONCE = 4;

export class TrackLane {
  readonly #poll: { minMs: number; maxMs: number };
  /** Items a `single` lookup in flight is asking about: not asked twice at once. */
  readonly #asking = new Set<number>();

  constructor(private readonly ctx: ShardContext) {
    this.#poll = pollBounds(ctx.limits);
  }

  run(): Promise<void> {
    return this.ctx.limits.lookup === 'single' ? this.#singles() : this.#lookups();
  }

  #over(): boolean {
    return this.ctx.draining || !workLeft(this.ctx);
  }

  // ----- batch and list -----

  async #lookups(): Promise<void> {
    const { s, items, limits, activities, input } = this.ctx;
    for (;;) {
      await condition(() => this.#over() || items.count(Phase.submitted) > 0);
      if (this.#over()) return;
      // An interruptible sleep: continue-as-new must not wait for a whole poll interval, nor a shard
      // whose tasks webhooks have all reported (without webhooks only this lane empties `submitted`).
      // The lookup's time is carried over continue-as-new, so the next run keeps the pace rather
      // than starting a whole interval over. A task about to be overdue is looked up when it is,
      // never sooner than the shortest interval (overdue tasks must not set off lookups back to back).
      // Tasks submitted during the wait make the lookup due sooner: it is planned again once a
      // lookup's worth of them have been (a bounded number of timers, not one per submit).
      const now = Date.now();
      const due = Math.min(
        now + this.#lookupWaitMs(now),
        Math.max(items.firstOverdueAt(), now + this.#poll.minMs),
      );
      s.nextLookupAt = Math.min(s.nextLookupAt ?? due, due);
      const waitMs = s.nextLookupAt - now;
      const plannedAtSubmits = s.apiCalls.submit;
      const noneLeft = () => this.ctx.draining || items.count(Phase.submitted) === 0;
      const moreSubmitted = () =>
        !finishesPushed(limits) && s.apiCalls.submit >= plannedAtSubmits + this.#lookupTargetNow();
      if (waitMs > 0 && (await condition(() => noneLeft() || moreSubmitted(), waitMs))) {
        if (this.ctx.draining) return;
        if (!noneLeft()) continue;
      }
      s.nextLookupAt = undefined;
      const { indices, taskIds } = items.submittedTasks();
      if (taskIds.length === 0) continue;
      const sinceMs = limits.lookup === 'list' ? this.#oldestSubmit(indices) - LIST_SKEW_MS : undefined;
      const answer = await activities.lookupTasks.executeWithOptions(
        { summary: `look up ${plural(taskIds.length, 'task')}` },
        [{ plan: input.plan, taskIds, ...(sinceMs !== undefined ? { sinceMs } : {}) }],
      );
      const answeredAt = Date.now();
      const { finished, finishedSubmittedAt } = this.#tell(indices, answer);
      if (!finishesPushed(limits))
        s.generationMs = learnGenerationTimes(
          this.#samples(),
          finishedSubmittedAt,
          s.lastLookup?.atMs,
          answeredAt,
        );
      s.lastLookup = { atMs: answeredAt, finished };
      s.pollMs = nextPollDelay(
        s.pollMs,
        finished,
        this.#lookupTargetNow(),
        this.#poll.minMs,
        this.#poll.maxMs,
      );
      if (this.#submitting()) s.busyPollMs = s.pollMs;
    }
  }

  /** A lookup's answer told to the items; what finished, for the timing. */
  #tell(indices: number[], answer: LookupTasksOutput): { finished: number; finishedSubmittedAt: number[] } {
    const { s, items } = this.ctx;
    s.apiCalls.lookup += answer.calls ?? 1;
    const atProvider = items.count(Phase.submitted);
    const told = items.lookedUp(indices, answer.statuses, answer.results);
    // Tasks waiting in the provider's queue: more are in flight than it runs (concurrency-cap.ts).
    // A lookup asks about some of the shard's tasks: their shares waiting and running stand for
    // all of them (those it found finished, and others not asked yet, hold no slot).
    if (answer.queued && s.concurrency) {
      const share = (count: number): number => Math.round((atProvider * count) / indices.length);
      const running = share(answer.statuses.filter((status) => status === 'processing').length);
      s.concurrency = afterLookupQueue(s.concurrency, running, share(answer.queued), items.doneAtProvider());
    }
    for (const task of told.unknown) log.warn('unknown task status; treating it as not finished yet', task);
    items.overdue(Date.now());
    return told;
  }

  #oldestSubmit(indices: readonly number[]): number {
    const submittedAt = this.ctx.s.submittedAt ?? [];
    return Math.min(Date.now(), ...indices.map((index) => submittedAt[index] ?? Date.now()));
  }

  #submitting(): boolean {
    const { s, items } = this.ctx;
    return !s.paused && !s.cancelled && items.count(Phase.queued) > 0;
  }

  #lookupTargetNow(): number {
    const { limits, items } = this.ctx;
    return lookupTarget(limits.maxInFlight, this.#submitting() ? undefined : items.count(Phase.submitted));
  }

  #samples(): number[] {
    return this.ctx.s.generationMs ?? this.ctx.limits.generationMs ?? [];
  }

  /**
   * The wait before the next lookup: until its tasks are due by their ages (lookup-timing.ts), else
   * the last lookups' pace. With webhooks, lookups only catch lost deliveries: the pace alone.
   */
  #lookupWaitMs(nowMs: number): number {
    const { s, items, limits } = this.ctx;
    const due = finishesPushed(limits)
      ? undefined
      : dueLookupDelay({
          nowMs,
          submittedAtMs: items.submittedTimes(),
          lastLookupAtMs: s.lastLookup?.atMs,
          samples: this.#samples(),
          target: this.#lookupTargetNow(),
          minMs: this.#poll.minMs,
          maxMs: this.#poll.maxMs,
        });
    if (due === undefined) return s.pollMs;
    // A lookup that found nothing backs off as the spec asks, whatever the ages say.
    return s.lastLookup?.finished === 0 ? Math.max(due, s.pollMs) : due;
  }

  // ----- single -----

  async #singles(): Promise<void> {
    const { items } = this.ctx;
    const inFlight = new Set<Promise<void>>();
    for (;;) {
      await condition(
        () =>
          this.#over() ||
          (items.count(Phase.submitted) > this.#asking.size &&
            inFlight.size < SINGLE_LOOKUP_ACTIVITIES_AT_ONCE),
      );
      if (this.#over()) break;
      const plan = checkPlan(this.#samples(), {
        ...this.#poll,
        webhooks: finishesPushed(this.ctx.limits),
        ...(this.ctx.s.concurrency?.polled ? { firstQuantile: COLLECTING_FIRST_CHECK_QUANTILE } : {}),
      });
      const now = Date.now();
      const { due, nextAtMs } = dueChecks(this.#checkedTasks(), now, plan, SINGLE_LOOKUP_TASKS);
      if (due.length === 0) {
        // Woken early only to end: a task submitted meanwhile is due no sooner than plan.firstMs.
        // Or by the first generation time learned (a push told one): the plan's slowest pace ends.
        const waitMs = Math.max(
          this.#poll.minMs / 4,
          Math.min(nextAtMs, items.firstOverdueAt(), now + plan.firstMs) - now,
        );
        const guessing = this.#samples().length === 0;
        await condition(
          () =>
            this.#over() || items.count(Phase.submitted) === 0 || (guessing && this.#samples().length > 0),
          Math.round(waitMs),
        );
        continue;
      }
      const asking = this.#ask(due).finally(() => inFlight.delete(asking));
      inFlight.add(asking);
    }
    await Promise.all(inFlight);
  }

  /** The tasks at the API that no lookup in flight is asking about, with their checks so far. */
  #checkedTasks(): CheckedTask[] {
    const { s, items } = this.ctx;
    const submittedAt = s.submittedAt ?? [];
    const checks = (s.checks ??= []);
    const checkedAt = (s.checkedAt ??= []);
    const tasks: CheckedTask[] = [];
    for (const index of items.submittedTasks().indices) {
      if (this.#asking.has(index)) continue;
      const since = submittedAt[index] ?? Date.now();
      const last = checkedAt[index] ?? undefined;
      // Calls about an earlier attempt of the item do not count for this one.
      const current = last !== undefined && last >= since;
      tasks.push({
        index,
        submittedAtMs: since,
        checks: current ? (checks[index] ?? 0) : 0,
        lastCheckAtMs: current ? last : undefined,
      });
    }
    return tasks;
  }

  async #ask(indices: number[]): Promise<void> {
    const { s, items, activities, input } = this.ctx;
    for (const index of indices) this.#asking.add(index);
    try {
      const taskIds = indices.map((index) => items.taskIdOf(index));
      const answer = await activities.lookupTasks.executeWithOptions(
        { summary: `check ${plural(taskIds.length, 'task')}` },
        [{ plan: input.plan, taskIds }],
      );
      const answeredAt = Date.now();
      const before = indices.map((index) => ({ index, last: s.checkedAt?.[index] ?? undefined }));
      this.#tell(indices, answer);
      const checks = (s.checks ??= []);
      const checkedAt = (s.checkedAt ??= []);
      let samples = this.#samples();
      for (const { index, last } of before) {
        const submittedAt = s.submittedAt?.[index] ?? answeredAt;
        const current = last !== undefined && last >= submittedAt;
        const phase = items.state.phase[index];
        if (phase !== Phase.submitted) {
          // Finished between its last call (or its submit) and this one.
          if (phase === Phase.storing && !finishesPushed(this.ctx.limits))
            samples = learnGenerationTimes(samples, [submittedAt], current ? last : undefined, answeredAt);
          continue;
        }
        checks[index] = (current ? (checks[index] ?? 0) : 0) + 1;
        checkedAt[index] = answeredAt;
      }
      if (!finishesPushed(this.ctx.limits)) s.generationMs = samples;
    } finally {
      for (const index of indices) this.#asking.delete(index);
    }
  }
}
