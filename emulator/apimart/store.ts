// The tasks the emulator has acknowledged, and the credits they hold.
//
// A task's whole future is drawn at submit (queue time, generation time, whether it fails), so
// its state at any moment is a pure function of the clock: 100,000 tasks need no timers, and a
// task can never be lost or stuck. Records are fixed-shape class instances holding only what the
// views need; an expired task keeps its record as a tombstone so lookups can say "expired".
//
// Credits: n x price is taken from the balance at submit. A task that will fail is also put on
// a min-heap by its terminal moment; `settle()` pops the heap and refunds, and runs before every
// balance check and stats read, so the balance is exact at every observation without a timer.
import type { ReferenceThumbnail } from './references.js';
import type { Language, Resolution, TaskState } from './wire.js';
import type { AccountState } from './auth.js';
import type { Clock } from '../core/clock.js';
import type { EmulatorConfig } from './config.js';
import type { TaskErrorCode } from './errors.js';
import { uniform, type Random } from '../core/random.js';
import { newTaskId } from './task-id.js';
import type { TaskJournal } from './journal.js';

export type TaskPhase = TaskState | 'expired';

export class TaskRecord {
  constructor(
    readonly id: string,
    readonly account: AccountState,
    readonly prompt: string,
    readonly n: number,
    readonly size: string,
    readonly resolution: Resolution,
    /** The submit `language`, if any: the default for this task's error texts and its webhook. */
    readonly language: Language | undefined,
    readonly webhook: string | undefined,
    readonly submittedAt: number,
    /** End of the queue time: pending before, processing from here. */
    readonly startsAt: number,
    /** The terminal moment: completed or failed from here. */
    readonly endsAt: number,
    /** After this the task and its images are gone (404; batch says expired). */
    readonly expiresAt: number,
    readonly estimatedSeconds: number,
    readonly failure: TaskErrorCode | undefined,
    /** Credits taken at submit; refunded (and reported as 0) once a failing task has failed. */
    readonly reserved: number,
    /**
     * A job the provider lost (faults.stuck_task_rate): processing forever, never pushed, and
     * never charged (the spec: such tasks are refunded after a timeout).
     */
    readonly stuck = false,
    /** The submit's Idempotency-Key and a fingerprint of its request, when it sent one. */
    readonly idempotency?: IdempotencyRecord,
    /** Its first reference image, which its result images show. */
    readonly reference?: ReferenceThumbnail,
  ) {}

  phaseAt(now: number): TaskPhase {
    if (now < this.startsAt) return 'pending';
    if (this.stuck || now < this.endsAt) return 'processing';
    if (now >= this.expiresAt) return 'expired';
    return this.failure ? 'failed' : 'completed';
  }

  /** What the task costs as seen at `now`: the reservation, or 0 once it has failed. */
  creditsAt(now: number): number {
    return this.failure && now >= this.endsAt ? 0 : this.reserved;
  }
}

export interface IdempotencyRecord {
  key: string;
  /** sha256 of the validated request: a replay must ask for the same thing. */
  fingerprint: string;
}

export interface NewTask {
  account: AccountState;
  prompt: string;
  n: number;
  size: string;
  resolution: Resolution;
  language: Language | undefined;
  webhook: string | undefined;
  idempotency?: IdempotencyRecord;
  reference?: ReferenceThumbnail;
}

export class TaskStore {
  private readonly tasks = new Map<string, TaskRecord>();
  /** Tasks by account and Idempotency-Key. */
  private readonly byIdempotencyKey = new Map<string, TaskRecord>();
  private readonly refunds = new RefundHeap();
  private readonly blockedWords: readonly string[];
  private readonly scaleMs: number;
  private reservedTotal = 0;
  private refundedTotal = 0;

  constructor(
    private readonly config: EmulatorConfig,
    private readonly clock: Clock,
    /** Draws durations and failures. */
    private readonly random: Random,
    /** Draws the random part of task ids; separate so ids do not shift the other draws. */
    private readonly idRandom: Random,
    /** Written before a task is acknowledged, when the config has a `state_file`. */
    private readonly journal?: TaskJournal,
  ) {
    this.blockedWords = config.generation.blocked_words.map((word) => word.toLowerCase());
    this.scaleMs = 1000 * config.time_scale;
  }

  get size(): number {
    return this.tasks.size;
  }

  get(id: string): TaskRecord | undefined {
    return this.tasks.get(id);
  }

  values(): IterableIterator<TaskRecord> {
    return this.tasks.values();
  }

  priceOf(n: number, resolution: Resolution): number {
    return n * this.config.generation.credits_per_image[resolution];
  }

  /** Creates the task and takes its credits; the caller has checked the balance after `settle()`. */
  create(input: NewTask): TaskRecord {
    const { generation } = this.config;
    const now = this.clock.now();
    let id = newTaskId(now, this.idRandom);
    while (this.tasks.has(id)) id = newTaskId(now, this.idRandom);
    const queueMs = uniform(this.random, generation.queue_seconds) * this.scaleMs;
    const processMs = uniform(this.random, generation.seconds[input.resolution]) * this.scaleMs;
    // Draw even for blocked prompts so one blocked prompt does not shift every later draw.
    const randomFailure = generation.failure_rate > 0 && this.random() < generation.failure_rate;
    const stuckRate = this.config.faults.stuck_task_rate;
    const stuck = stuckRate > 0 && this.random() < stuckRate;
    const prompt = input.prompt.toLowerCase();
    const failure: TaskErrorCode | undefined = this.blockedWords.some((word) => prompt.includes(word))
      ? 'content_blocked'
      : randomFailure
        ? 'generation_failed'
        : undefined;
    const mean = (range: readonly [number, number]) => (range[0] + range[1]) / 2;
    const estimatedSeconds = Math.max(
      1,
      Math.ceil(
        (mean(generation.queue_seconds) + mean(generation.seconds[input.resolution])) *
          this.config.time_scale,
      ),
    );
    // Whole milliseconds, so the ground truth and the Unix-second fields agree exactly.
    const startsAt = now + Math.round(queueMs);
    const endsAt = startsAt + Math.round(processMs);
    const reserved = stuck ? 0 : this.priceOf(input.n, input.resolution);
    const record = new TaskRecord(
      id,
      input.account,
      input.prompt,
      input.n,
      input.size,
      input.resolution,
      input.language,
      input.webhook,
      now,
      startsAt,
      endsAt,
      // On a whole second, so the task's expires_at (Unix seconds) is exactly when the 404s start.
      Math.ceil((endsAt + this.config.result_ttl_seconds * this.scaleMs) / 1000) * 1000,
      estimatedSeconds,
      failure,
      reserved,
      stuck,
      input.idempotency,
      input.reference,
    );
    this.journal?.append(record);
    this.add(record);
    return record;
  }

  /** Takes a task back from the journal after a restart, with its credits. */
  add(record: TaskRecord): void {
    this.tasks.set(record.id, record);
    if (record.idempotency) this.byIdempotencyKey.set(keyOf(record.account, record.idempotency.key), record);
    record.account.credits -= record.reserved;
    this.reservedTotal += record.reserved;
    if (record.failure) this.refunds.push(record);
  }

  /**
   * The task an earlier submit of `account` created with Idempotency-Key `key`, while the key is
   * remembered (`idempotency.ttl_seconds` after that submit).
   */
  findByIdempotencyKey(
    account: AccountState,
    key: string,
    now: number = this.clock.now(),
  ): TaskRecord | undefined {
    const record = this.byIdempotencyKey.get(keyOf(account, key));
    if (!record || now >= record.submittedAt + this.config.idempotency.ttl_seconds * this.scaleMs)
      return undefined;
    return record;
  }

  /** Refunds every failing task whose terminal moment has passed. */
  settle(now: number = this.clock.now()): void {
    for (let record = this.refunds.peek(); record && record.endsAt <= now; record = this.refunds.peek()) {
      this.refunds.pop();
      record.account.credits += record.reserved;
      this.refundedTotal += record.reserved;
    }
  }

  /** Credits charged so far: taken at submit, minus refunds of failed tasks. */
  creditsCharged(): number {
    this.settle();
    return this.reservedTotal - this.refundedTotal;
  }

  countByPhase(now: number): Record<TaskPhase, number> {
    const counts: Record<TaskPhase, number> = {
      pending: 0,
      processing: 0,
      completed: 0,
      failed: 0,
      expired: 0,
    };
    for (const record of this.tasks.values()) counts[record.phaseAt(now)]++;
    return counts;
  }
}

const keyOf = (account: AccountState, key: string): string => `${account.id}\0${key}`;

/** Binary min-heap of failing tasks by terminal moment (they do not end in submit order). */
class RefundHeap {
  private readonly items: TaskRecord[] = [];

  peek(): TaskRecord | undefined {
    return this.items[0];
  }

  push(record: TaskRecord): void {
    const items = this.items;
    items.push(record);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (items[parent]!.endsAt <= record.endsAt) break;
      items[i] = items[parent]!;
      i = parent;
    }
    items[i] = record;
  }

  pop(): void {
    const items = this.items;
    const last = items.pop();
    if (!last || items.length === 0) return;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= items.length) break;
      const right = left + 1;
      const child = right < items.length && items[right]!.endsAt < items[left]!.endsAt ? right : left;
      if (items[child]!.endsAt >= last.endsAt) break;
      items[i] = items[child]!;
      i = child;
    }
    items[i] = last;
  }
}
