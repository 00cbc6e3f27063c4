// A prediction's webhooks: the events of its webhook_events_filter, each a POST of the prediction
// as it is at that moment, signed per attempt (Standard Webhooks, signing.ts).
//
// When each event is sent (docs/topics/webhooks, read 2026-11-26): `start` when the prediction is
// created (the docs' example body is still `starting`), `logs` when it starts running (its first
// log line), `output` when its files are up, `completed` when it ends, whatever the end. Only the
// `completed` webhook is retried, on any failure (no answer, 4xx or 5xx), on an exponential
// schedule whose last retry comes about a minute after completion; intermediate ones are sent
// once. Each message keeps its webhook-id across retries; the timestamp is the attempt's.
import type { Clock, Timer } from '../core/clock.js';
import {
  JobEndTimers,
  WebhookDispatcher,
  type CoreStats,
  type Random,
  type WebhookAttempt,
} from '../core/index.js';
import type { ReplicateConfig } from './config.js';
import type { Prediction } from './predictions.js';
import { newMessageId, webhookHeaders } from './signing.js';
import { predictionJson, type ViewContext, type ViewKind } from './view.js';

export interface PredictionWebhooksOptions {
  config: ReplicateConfig;
  clock: Clock;
  view: () => ViewContext;
  /** The account's signing secret (whsec_...). */
  secretOf: (username: string) => string;
  /** Draws duplicate and lost faults. */
  faultRandom: Random;
  /** Draws message ids. */
  idRandom: Random;
  stats: CoreStats;
}

export class PredictionWebhooks {
  private readonly completed: WebhookDispatcher;
  private readonly intermediate: WebhookDispatcher;
  private readonly ends: JobEndTimers<Prediction>;
  private readonly starts = new Map<string, Timer>();

  constructor(private readonly options: PredictionWebhooksOptions) {
    const { config, clock, stats, faultRandom } = options;
    const common = {
      clock,
      timeScale: config.time_scale,
      attemptTimeoutSeconds: config.webhooks.timeout_seconds,
      retryOn: 'any_failure' as const,
      duplicateRate: config.faults.webhook_duplicate_rate,
      lostRate: config.faults.webhook_lost_rate,
      random: faultRandom,
      onAttempt: (attempt: WebhookAttempt) => stats.webhook(attempt.outcome),
    };
    this.completed = new WebhookDispatcher({
      ...common,
      retryDelaysSeconds: config.webhooks.retry_delays_seconds,
    });
    this.intermediate = new WebhookDispatcher({ ...common, retryDelaysSeconds: [] });
    this.ends = new JobEndTimers(clock, (job) => this.onEnd(job));
  }

  /** Arms a new (or restored) prediction's webhooks; `created` sends its `start` event now. */
  watch(job: Prediction, created: boolean): void {
    const events = job.data.events;
    if (!events || job.record.webhook === null) return;
    if (created && events.includes('start')) this.send(job, 'full', false);
    if (events.includes('logs')) this.armStart(job);
    if (events.includes('output') || events.includes('completed')) this.ends.watch(job);
  }

  /** A cancel moved these predictions' start or end. */
  rearm(jobs: readonly Prediction[]): void {
    this.ends.rearm(jobs);
    for (const job of jobs) if (this.starts.has(job.id)) this.armStart(job);
  }

  async close(): Promise<void> {
    this.ends.close();
    for (const timer of this.starts.values()) timer.cancel();
    this.starts.clear();
    await Promise.all([this.completed.close(), this.intermediate.close()]);
  }

  private armStart(job: Prediction): void {
    this.starts.get(job.id)?.cancel();
    this.starts.delete(job.id);
    const { clock } = this.options;
    if (!Number.isFinite(job.startsAt) || job.startsAt < clock.now()) return;
    const timer = clock.setTimeout(() => {
      this.starts.delete(job.id);
      if (job.isRunningAt(clock.now())) this.send(job, 'full', false);
    }, job.startsAt - clock.now());
    this.starts.set(job.id, timer);
  }

  private onEnd(job: Prediction): void {
    const events = job.data.events ?? [];
    const { store } = this.options.view();
    const state = store.stateAt(job, this.options.clock.now());
    if (state.status === 'succeeded' && events.includes('output')) this.send(job, 'output_event', false);
    if (events.includes('completed')) this.send(job, 'full', true);
  }

  private send(job: Prediction, kind: ViewKind, retried: boolean): void {
    const url = job.record.webhook;
    if (url === null) return;
    const { clock, secretOf, idRandom } = this.options;
    const body = JSON.stringify(predictionJson(this.options.view(), job, clock.now(), kind));
    const id = newMessageId(idRandom);
    const secret = secretOf(job.account);
    (retried ? this.completed : this.intermediate).send({
      url,
      jobId: job.id,
      body,
      headers: () => webhookHeaders(secret, id, Math.floor(clock.now() / 1000), body),
    });
  }
}
