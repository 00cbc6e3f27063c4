// The predictions the emulator has created, on core's job simulator: each one's whole future drawn
// at create (queue wait, run time, outcome), its status at any instant a function of the clock,
// plus what Replicate adds to a plain job: a deadline (Cancel-After) that aborts a prediction not
// yet started and cancels a running one, the 30-minute run timeout, retention of its data, and
// billing against the account's credit.
//
// Core plans a job's start and end itself; the deadline and the timeout are folded in here before
// it does: the queue wait and run time are drawn on this module's own stream, the run time is cut
// at the deadline or the timeout (`endReason` says which), and the start deadline goes to core,
// which ends a job that has not started by then (`timed_out`, Replicate's `aborted`). A stuck
// prediction ignores its running deadline: the provider has lost it.
import type { Clock } from '../core/clock.js';
import { JobSimulator, uniform, type Job, type Random } from '../core/index.js';
import type { AccountConfig, ModelConfig, ReplicateConfig } from './config.js';
import type { ValidCreate } from './create-request.js';
import { imagePlan, type ImagePlan } from './models.js';
import type { PredictionStatus, WebhookEvent } from './wire.js';

/** What a prediction keeps beside core's record (journaled with it, so JSON only). */
export interface PredictionData {
  model: string;
  version: string;
  /** The input as sent. */
  input: Record<string, unknown>;
  plan: ImagePlan;
  events: WebhookEvent[] | null;
  /** The seed the logs say was used: the input's, or one drawn. */
  seed: number;
  /** The random part of its output file URLs. */
  fileKey: string;
  /** Absolute deadline (Cancel-After), in clock ms. */
  deadlineAt: number | null;
  /** What cuts the run short: nothing, the run timeout, or the deadline. */
  endReason: 'natural' | 'timeout' | 'deadline';
  price: ModelConfig['price'];
}

export type Prediction = Job<PredictionData>;

export interface PredictionState {
  status: PredictionStatus;
  startedAt: number | null;
  completedAt: number | null;
  error: string | null;
  /** Whether its output exists (succeeded), before retention removes it. */
  hasOutput: boolean;
}

/** The error of a prediction every one of whose images the safety checker flagged (replicate/cog-flux). */
export const NSFW_ERROR =
  'All generated images contained NSFW content. Try running it again with a different prompt.';
export const TIMEOUT_ERROR = 'Prediction timed out';

const CROCKFORD_LOWER = '0123456789abcdefghjkmnpqrstvwxyz';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const draw = (random: Random, alphabet: string, length: number): string => {
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet[Math.floor(random() * alphabet.length)];
  return out;
};

interface Ledger {
  readonly credit: number;
  settled: number;
  /** Predictions not yet ended: billed when they end. */
  readonly pending: Set<Prediction>;
}

export interface PredictionStoreOptions {
  config: ReplicateConfig;
  clock: Clock;
  /** Streams: futures (queue, run), ids (prediction ids, file keys, seeds). */
  timingRandom: Random;
  idRandom: Random;
  /** Given to core for its own draws (failure, stuck). */
  outcomeRandom: Random;
}

export class PredictionStore {
  readonly jobs: JobSimulator<PredictionData>;
  private readonly byFileKey = new Map<string, Prediction>();
  private readonly downloads = new Map<string, Set<number>>();
  private readonly ledgers = new Map<string, Ledger>();
  private readonly scaleMs: number;

  constructor(private readonly options: PredictionStoreOptions) {
    const { config, clock } = options;
    this.scaleMs = 1000 * config.time_scale;
    this.jobs = new JobSimulator<PredictionData>({
      clock,
      timeScale: config.time_scale,
      random: options.outcomeRandom,
      journalFile: config.state_file,
    });
    for (const account of config.accounts) this.ledgerOf(account);
  }

  get(id: string): Prediction | undefined {
    return this.jobs.get(id);
  }

  byFile(fileKey: string): Prediction | undefined {
    return this.byFileKey.get(fileKey);
  }

  /** Every prediction, oldest first. */
  values(): readonly Prediction[] {
    return this.jobs.values();
  }

  /** Replays the state file; returns the predictions it restored (for their webhooks). */
  restore(): Prediction[] {
    const restored = this.jobs.restore();
    for (const job of restored) this.track(job);
    return restored;
  }

  create(account: AccountConfig, valid: ValidCreate, cancelAfterSeconds: number | null): Prediction {
    const { config, clock, timingRandom, idRandom } = this.options;
    const { generation } = config;
    const now = clock.now();
    let id = draw(idRandom, CROCKFORD_LOWER, 26);
    while (this.jobs.has(id)) id = draw(idRandom, CROCKFORD_LOWER, 26);
    // A restarted emulator draws the same sequence again: skip what the journal already holds.
    let fileKey = draw(idRandom, BASE62, 45);
    while (this.byFileKey.has(fileKey)) fileKey = draw(idRandom, BASE62, 45);
    const drawnSeed = Math.floor(idRandom() * 65536);
    // Both drawn on every create, in this order, so one create's options never shift another's future.
    const queueSeconds = uniform(timingRandom, generation.queue_seconds);
    let runSeconds = uniform(timingRandom, generation.run_seconds);
    let endReason: PredictionData['endReason'] = 'natural';
    if (runSeconds > generation.run_timeout_seconds) {
      runSeconds = generation.run_timeout_seconds;
      endReason = 'timeout';
    }
    // The same arithmetic as core's, so the moments agree to the millisecond.
    const readyAt = now + Math.round(queueSeconds * this.scaleMs);
    const deadlineAt =
      cancelAfterSeconds === null ? null : now + Math.round(cancelAfterSeconds * this.scaleMs);
    if (deadlineAt !== null && deadlineAt >= readyAt) {
      const left = (deadlineAt - readyAt) / this.scaleMs;
      if (left < runSeconds) {
        runSeconds = left;
        endReason = 'deadline';
      }
    }
    const plan = imagePlan(valid.model, valid.effectiveInput);
    const prompt = plan.prompt.toLowerCase();
    const flagged =
      !plan.safetyCheckerOff && generation.blocked_words.some((word) => prompt.includes(word.toLowerCase()));
    const job = this.jobs.submit({
      id,
      account: account.username,
      queueSeconds: [queueSeconds, queueSeconds],
      runSeconds: [runSeconds, runSeconds],
      failureRate: endReason === 'timeout' ? 1 : generation.failure_rate,
      stuckRate: config.faults.stuck_prediction_rate,
      moderated: flagged,
      startTimeoutSeconds: cancelAfterSeconds,
      retentionSeconds: config.retention.seconds,
      webhook: valid.webhook,
      data: {
        model: valid.model.name,
        version: valid.version,
        input: valid.input,
        plan,
        events: valid.events,
        seed: typeof valid.effectiveInput.seed === 'number' ? valid.effectiveInput.seed : drawnSeed,
        fileKey,
        deadlineAt,
        endReason,
        price: valid.model.price,
      },
    });
    this.track(job);
    return job;
  }

  /** POST .../cancel: a prediction not started never runs, a running one ends now. */
  cancel(job: Prediction): void {
    this.jobs.cancel(job, this.options.clock.now());
  }

  stateAt(job: Prediction, now: number): PredictionState {
    const ended = job.hasEndedAt(now);
    const started = Number.isFinite(job.startsAt) && job.startsAt <= now ? job.startsAt : null;
    if (!ended || job.outcome === 'stuck') {
      return {
        status: started === null ? 'starting' : 'processing',
        startedAt: started,
        completedAt: null,
        error: null,
        hasOutput: false,
      };
    }
    const end = (status: PredictionStatus, error: string | null = null): PredictionState => ({
      status,
      startedAt: started,
      completedAt: job.endsAt,
      error,
      hasOutput: status === 'succeeded',
    });
    if (job.outcome === 'cancelled') return end('canceled');
    if (job.outcome === 'timed_out') return end('aborted');
    if (job.data.endReason === 'deadline') return end('canceled');
    if (job.data.endReason === 'timeout') return end('failed', TIMEOUT_ERROR);
    if (job.outcome === 'moderated') return end('failed', NSFW_ERROR);
    if (job.outcome === 'failed') return end('failed', this.options.config.generation.failure_message);
    return end('succeeded');
  }

  /** When its input, output, logs and files are removed; Infinity until it has ended. */
  removedAt(job: Prediction): number {
    if (!Number.isFinite(job.endsAt) || job.outcome === 'stuck') return Infinity;
    const { retention } = this.options.config;
    if (retention.from === 'completed') return job.deletedAt;
    return Math.max(job.endsAt, job.record.submittedAt + Math.round(retention.seconds * this.scaleMs));
  }

  /** Emulated seconds it ran (predict_time), once ended; 0 if it never started. */
  predictSeconds(job: Prediction): number {
    if (!Number.isFinite(job.startsAt) || !Number.isFinite(job.endsAt)) return 0;
    return Math.max(0, job.endsAt - job.startsAt) / this.scaleMs;
  }

  /** What it is billed once ended: images it made, and the time it ran; nothing if it never started. */
  costOf(job: Prediction, now: number): number {
    const state = this.stateAt(job, now);
    if (state.completedAt === null || state.startedAt === null) return 0;
    const { price, plan } = job.data;
    const images = state.status === 'succeeded' ? plan.count * price.per_image_usd : 0;
    return images + this.predictSeconds(job) * price.per_second_usd;
  }

  /** The account's credit at `now`: its configured credit minus what its ended predictions cost. */
  balance(username: string, now: number): number {
    const ledger = this.ledgers.get(username);
    if (!ledger) return 0;
    for (const job of ledger.pending) {
      if (!job.hasEndedAt(now) || job.outcome === 'stuck') continue;
      ledger.settled += this.costOf(job, now);
      ledger.pending.delete(job);
    }
    return ledger.credit - ledger.settled;
  }

  /** Records a complete download of output `index` (for the deleted-before-download audit). */
  markDownloaded(job: Prediction, index: number): void {
    let seen = this.downloads.get(job.id);
    if (!seen) this.downloads.set(job.id, (seen = new Set()));
    seen.add(index);
    if (seen.size >= job.data.plan.count) job.resultFetchedAt ??= this.options.clock.now();
  }

  downloadedCount(job: Prediction): number {
    return this.downloads.get(job.id)?.size ?? 0;
  }

  private ledgerOf(account: AccountConfig): Ledger {
    let ledger = this.ledgers.get(account.username);
    if (!ledger) {
      ledger = { credit: account.credit_usd, settled: 0, pending: new Set() };
      this.ledgers.set(account.username, ledger);
    }
    return ledger;
  }

  private track(job: Prediction): void {
    this.byFileKey.set(job.data.fileKey, job);
    this.ledgers.get(job.account)?.pending.add(job);
  }
}
