// The job simulator shared by the provider emulators: every job's future drawn at submit from a
// seeded stream (dispatch delay, run time from a [min, max] seconds range scaled by time_scale,
// outcome: succeeded, failed, moderated, stuck forever), optional per-account concurrency lanes
// (lanes.ts), cancel, retention, ground truth for audits, and an optional journal (journal.ts).
//
// Everything is a function of the clock between events, so reads never mutate state and no job
// needs a timer. Providers keep their own wire shapes in `data` and read phases from here.
import type { Clock } from './clock.js';
import { EventJournal, type JournalEvent } from './journal.js';
import { Job, JOB_PHASES, type JobPhase, type JobRecord, type PlannedOutcome } from './job.js';
import { Lane } from './lanes.js';
import { uniform, type Random } from './random-streams.js';

export interface JobSimulatorOptions {
  clock: Clock;
  /** Emulated seconds are multiplied by this (0.01: a 30 s run takes 0.3 s). */
  timeScale: number;
  /** Draws every job's future; one stream for nothing else keeps futures reproducible. */
  random: Random;
  /** Jobs of one account running at once; Infinity (the default) for no limit. */
  concurrency?: number;
  /** Per-account limits over `concurrency`. */
  concurrencyByAccount?: Readonly<Record<string, number>>;
  /** The `state_file`, if any: every change is written there before it is acknowledged. */
  journalFile?: string | null;
}

/** What a provider asks for at submit; seconds are emulated seconds (time_scale applied here). */
export interface JobRequest<D> {
  id: string;
  account: string;
  /** Platform delay before the job can start (the queue wait without a concurrency limit). */
  queueSeconds: readonly [number, number];
  runSeconds: readonly [number, number];
  /** Added to the drawn run time (e.g. a provider's invisible internal retries). */
  extraRunSeconds?: number;
  failureRate: number;
  stuckRate: number;
  /** The provider's moderation decided to flag it (e.g. a blocked word in the prompt). */
  moderated: boolean;
  /** Deadline to start, counted from submit; past it the job ends `timed_out` without running. */
  startTimeoutSeconds?: number | null;
  /**
   * How long the result is kept once the job ends; a function sees the job as drawn (its planned
   * outcome, its data) before it is journaled, for retention that depends on the result.
   */
  retentionSeconds: number | ((job: Job<D>) => number);
  webhook?: string | null;
  data: D;
}

export type CancelOutcome = 'cancelled_queued' | 'cancelled_running' | 'already_ended';

export class JobSimulator<D = unknown> {
  private readonly jobs = new Map<string, Job<D>>();
  private readonly order: Job<D>[] = [];
  private readonly lanes = new Map<string, Lane>();
  private readonly scaleMs: number;
  private defaultLimit: number;
  private readonly accountLimits: Map<string, number>;
  private readonly journal: EventJournal | undefined;
  /** Told which jobs a cancel or limit change moved (e.g. to re-arm their webhooks). */
  onReschedule: (jobs: Job<D>[]) => void = () => undefined;

  constructor(private readonly options: JobSimulatorOptions) {
    this.scaleMs = 1000 * options.timeScale;
    this.defaultLimit = options.concurrency ?? Infinity;
    this.accountLimits = new Map(Object.entries(options.concurrencyByAccount ?? {}));
    this.journal = options.journalFile ? new EventJournal(options.journalFile) : undefined;
  }

  get size(): number {
    return this.order.length;
  }

  get(id: string): Job<D> | undefined {
    return this.jobs.get(id);
  }

  has(id: string): boolean {
    return this.jobs.has(id);
  }

  /** Every job in submit order. */
  values(): readonly Job<D>[] {
    return this.order;
  }

  /** Emulated seconds in clock milliseconds. */
  ms(seconds: number): number {
    return seconds * this.scaleMs;
  }

  /** Draws the job's future, journals it, and schedules it in its account's lane. */
  submit(request: JobRequest<D>): Job<D> {
    const now = this.options.clock.now();
    const { random } = this.options;
    // Always four draws, in this order, so one job's options never shift another job's future.
    const queueMs = Math.round(this.ms(uniform(random, request.queueSeconds)));
    const runMs = Math.round(this.ms(uniform(random, request.runSeconds) + (request.extraRunSeconds ?? 0)));
    const failed = random() < request.failureRate;
    const stuck = random() < request.stuckRate;
    const planned: PlannedOutcome = stuck
      ? 'stuck'
      : request.moderated
        ? 'moderated'
        : failed
          ? 'failed'
          : 'succeeded';
    const timeout = request.startTimeoutSeconds;
    const record: JobRecord<D> = {
      id: request.id,
      account: request.account,
      submittedAt: now,
      readyAt: now + queueMs,
      runMs,
      planned,
      startDeadline: timeout === undefined || timeout === null ? null : now + Math.round(this.ms(timeout)),
      retentionMs: 0,
      webhook: request.webhook ?? null,
      data: request.data,
    };
    const job = new Job(record, this.order.length);
    const retention = request.retentionSeconds;
    record.retentionMs = Math.round(this.ms(typeof retention === 'function' ? retention(job) : retention));
    this.journal?.append({ kind: 'submit', at: now, job: record });
    return this.add(job);
  }

  /**
   * Cancels at `now`: a queued job never runs, a running one ends now; either way the lane is
   * rescheduled (a slot or a queue place is free). An ended job is left as it is.
   */
  cancel(job: Job<D>, now: number = this.options.clock.now()): CancelOutcome {
    if (job.hasEndedAt(now)) return 'already_ended';
    const running = job.isRunningAt(now);
    this.journal?.append({ kind: 'cancel', at: now, id: job.id });
    this.applyCancel(job, now);
    return running ? 'cancelled_running' : 'cancelled_queued';
  }

  /** The default limit and the accounts' own ones (Infinity: no limit). */
  limits(): { default: number; accounts: Record<string, number> } {
    return { default: this.defaultLimit, accounts: Object.fromEntries(this.accountLimits) };
  }

  /** The concurrency limit of `account` (its own, else the default); Infinity for none. */
  limitOf(account: string): number {
    return this.accountLimits.get(account) ?? this.defaultLimit;
  }

  /**
   * Changes a limit from `now` on: `account` null changes the default; `limit` null removes an
   * account's own limit (or, for the default, any limit). Jobs already running keep running.
   */
  setLimit(account: string | null, limit: number | null, now: number = this.options.clock.now()): void {
    this.journal?.append({ kind: 'limit', at: now, account, limit });
    this.applyLimit(account, limit, now);
  }

  /** Writes a provider event to the journal (replayed through `restore`'s `onCustom`). */
  recordCustom(name: string, payload: unknown): void {
    this.journal?.append({ kind: 'custom', at: this.options.clock.now(), name, payload });
  }

  /**
   * Replays the journal, if any: call once, before serving. `onCustom` receives the provider's own
   * events in order. Returns the jobs restored.
   */
  restore(onCustom: (name: string, payload: unknown, at: number) => void = () => undefined): Job<D>[] {
    if (!this.journal) return [];
    const restored: Job<D>[] = [];
    for (const event of this.journal.load()) this.replay(event, restored, onCustom);
    return restored;
  }

  /** Jobs of `account` ahead of `job` still waiting at `now`. */
  queuePosition(job: Job<D>, now: number = this.options.clock.now()): number {
    return this.laneOf(job.account).positionOf(job, now);
  }

  /** Queued plus running jobs of `account` at `now` (BFL's "active tasks"). */
  activeCount(account: string, now: number = this.options.clock.now()): number {
    let count = 0;
    for (const job of this.order) if (job.account === account && !job.hasEndedAt(now)) count++;
    return count;
  }

  runningCount(account: string, now: number = this.options.clock.now()): number {
    let count = 0;
    for (const job of this.order) if (job.account === account && job.isRunningAt(now)) count++;
    return count;
  }

  countByPhase(now: number = this.options.clock.now()): Record<JobPhase, number> {
    const counts = Object.fromEntries(JOB_PHASES.map((phase) => [phase, 0])) as Record<JobPhase, number>;
    for (const job of this.order) counts[job.phaseAt(now)]++;
    return counts;
  }

  /** The most jobs of `account` (of all accounts when omitted) that ran at one instant up to `now`. */
  peakRunning(account?: string, now: number = this.options.clock.now()): number {
    const edges: [number, number][] = [];
    for (const job of this.order) {
      if ((account !== undefined && job.account !== account) || job.startsAt > now) continue;
      edges.push([job.startsAt, 1]);
      if (job.endsAt <= now) edges.push([job.endsAt, -1]);
    }
    // An end at the same instant as a start frees the slot first.
    edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    let running = 0;
    let peak = 0;
    for (const [, delta] of edges) peak = Math.max(peak, (running += delta));
    return peak;
  }

  private add(job: Job<D>): Job<D> {
    this.jobs.set(job.id, job);
    this.order.push(job);
    this.laneOf(job.account).append(job);
    return job;
  }

  private laneOf(account: string): Lane {
    let lane = this.lanes.get(account);
    if (!lane) {
      lane = new Lane(account, this.limitOf(account));
      this.lanes.set(account, lane);
    }
    return lane;
  }

  private applyCancel(job: Job<D>, now: number): void {
    job.cancelledAt = now;
    job.outcome = 'cancelled';
    if (!job.isRunningAt(now)) job.startsAt = Infinity;
    job.endsAt = now;
    const moved = this.laneOf(job.account).reschedule(now) as Job<D>[];
    this.onReschedule([job, ...moved]);
  }

  private applyLimit(account: string | null, limit: number | null, now: number): void {
    if (account === null) this.defaultLimit = limit ?? Infinity;
    else if (limit === null) this.accountLimits.delete(account);
    else this.accountLimits.set(account, limit);
    const moved: Job<D>[] = [];
    for (const lane of this.lanes.values()) {
      const wanted = this.limitOf(lane.account);
      if (wanted === lane.limit) continue;
      lane.limit = wanted;
      moved.push(...(lane.reschedule(now) as Job<D>[]));
    }
    if (moved.length > 0) this.onReschedule(moved);
  }

  private replay(
    event: JournalEvent,
    restored: Job<D>[],
    onCustom: (name: string, payload: unknown, at: number) => void,
  ): void {
    switch (event.kind) {
      case 'submit':
        if (!this.jobs.has(event.job.id))
          restored.push(this.add(new Job(event.job as JobRecord<D>, this.order.length)));
        break;
      case 'cancel': {
        const job = this.jobs.get(event.id);
        if (job && !job.hasEndedAt(event.at)) this.applyCancel(job, event.at);
        break;
      }
      case 'limit':
        this.applyLimit(event.account, event.limit, event.at);
        break;
      case 'custom':
        onCustom(event.name, event.payload, event.at);
        break;
    }
  }
}
