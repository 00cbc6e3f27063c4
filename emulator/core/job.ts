// One simulated job (a provider's request, prediction or task): its whole future as drawn at
// submit, and its phase at any instant as a pure function of the clock.
//
// `startsAt` and `endsAt` are set by the job's concurrency lane (lanes.ts) and change only when an
// event reschedules the lane (a cancel, a limit change); between events nothing changes, so a
// phase read twice at the same instant always agrees, and 100,000 jobs need no timer each.

/** What the job will do once it runs, drawn at submit. */
export type PlannedOutcome = 'succeeded' | 'failed' | 'moderated' | 'stuck';
/** How it ended (or will end): planned, or cut short by a cancel or a start deadline. */
export type JobOutcome = PlannedOutcome | 'cancelled' | 'timed_out';
/**
 * `queued`: waiting for its dispatch delay or a free concurrency slot; `running`: started, not
 * ended (a stuck job stays here forever); then its outcome until `deletedAt`, then `deleted`.
 */
export type JobPhase =
  'queued' | 'running' | 'succeeded' | 'failed' | 'moderated' | 'cancelled' | 'timed_out' | 'deleted';

export const JOB_PHASES: readonly JobPhase[] = [
  'queued',
  'running',
  'succeeded',
  'failed',
  'moderated',
  'cancelled',
  'timed_out',
  'deleted',
];

/** The drawn, immutable part of a job: what the journal writes and a restart reads back. */
export interface JobRecord<D = unknown> {
  id: string;
  account: string;
  submittedAt: number;
  /** Submit plus the drawn dispatch delay: it cannot start before this. */
  readyAt: number;
  /** Drawn run time in clock milliseconds (time_scale applied). */
  runMs: number;
  planned: PlannedOutcome;
  /** Absolute moment by which it must have started, or it ends `timed_out` then (never runs). */
  startDeadline: number | null;
  /** How long its result is kept after it ends, in clock milliseconds. */
  retentionMs: number;
  webhook: string | null;
  /** The provider's own data (its validated input, its drawn extras); JSON-serializable. */
  data: D;
}

export class Job<D = unknown> {
  /** Position in submit order across the whole emulator, from 0. */
  readonly seq: number;
  startsAt = Infinity;
  endsAt = Infinity;
  outcome: JobOutcome;
  /** When a cancel was accepted; it fixes the outcome to `cancelled`. */
  cancelledAt: number | undefined;
  /** Set by the provider when a client got the result (a GET of it, or a delivered payload). */
  resultFetchedAt: number | undefined;
  /** Index in its lane's job list (lanes.ts), for queue positions. */
  laneIndex = -1;

  constructor(
    readonly record: JobRecord<D>,
    seq: number,
  ) {
    this.seq = seq;
    this.outcome = record.planned;
  }

  get id(): string {
    return this.record.id;
  }
  get account(): string {
    return this.record.account;
  }
  get data(): D {
    return this.record.data;
  }

  /** Ends plus retention; Infinity while it has not ended. */
  get deletedAt(): number {
    return this.endsAt + this.record.retentionMs;
  }

  isQueuedAt(now: number): boolean {
    return now < this.startsAt && now < this.endsAt;
  }

  isRunningAt(now: number): boolean {
    return this.startsAt <= now && now < this.endsAt;
  }

  hasEndedAt(now: number): boolean {
    return this.endsAt <= now;
  }

  phaseAt(now: number): JobPhase {
    if (now < this.endsAt) return now < this.startsAt ? 'queued' : 'running';
    if (now >= this.deletedAt) return 'deleted';
    // A stuck job never ends on its own; only a cancel ends it, and that makes it `cancelled`.
    return this.outcome === 'stuck' ? 'running' : this.outcome;
  }
}
