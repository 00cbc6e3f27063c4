// The terminal-state webhook (spec part 6) from the task side: one clock timer per task that was
// submitted with `webhook`, firing at its terminal moment and handing the Task object (in the
// submit language) and the account's webhook_secret to the WebhookSender, which owns signing,
// timeouts, retries and duplicates. Tasks without a webhook never get a timer.
import type { Clock, Timer } from '../core/clock.js';
import type { EmulatorConfig } from './config.js';
import type { Random } from '../core/random.js';
import type { WebhookOutcome } from './stats.js';
import type { TaskRecord, TaskStore } from './store.js';
import { renderTask } from './task-view.js';
import { callbackUrlFor, WebhookSender } from './webhooks.js';

export interface TerminalNotifierOptions {
  config: EmulatorConfig;
  clock: Clock;
  store: TaskStore;
  random: Random;
  resultBaseUrl: () => string;
  /** `duplicate`: the attempt was a deliberate second delivery (faults.webhook_duplicate_rate). */
  onOutcome: (outcome: WebhookOutcome, duplicate: boolean) => void;
}

export class TerminalNotifier {
  private readonly sender: WebhookSender;
  private readonly timers = new Set<{ timer?: Timer }>();
  private closed = false;

  constructor(private readonly options: TerminalNotifierOptions) {
    this.sender = new WebhookSender({
      timeScale: options.config.time_scale,
      duplicateRate: options.config.faults.webhook_duplicate_rate,
      random: options.random,
      clock: options.clock,
      onAttempt: (attempt) => options.onOutcome(attempt.outcome, attempt.duplicate === true),
    });
  }

  /** Arms the webhook of a task just created; a no-op for tasks without one. */
  schedule(record: TaskRecord): void {
    if (record.webhook === undefined || record.stuck || this.closed) return;
    // An object rather than the Timer itself, because a clock may fire before setTimeout returns.
    const pending: { timer?: Timer } = {};
    this.timers.add(pending);
    pending.timer = this.options.clock.setTimeout(
      () => {
        this.timers.delete(pending);
        this.fire(record);
      },
      Math.max(0, record.endsAt - this.options.clock.now()),
    );
  }

  private fire(record: TaskRecord): void {
    if (this.closed || record.webhook === undefined) return;
    this.options.store.settle();
    // Rendered as of the terminal moment itself, so a late timer still sends the terminal state.
    const task = renderTask(record, record.endsAt, record.language ?? 'en', this.options.resultBaseUrl());
    this.sender.send({
      callbackUrl: callbackUrlFor(record.webhook),
      taskId: record.id,
      body: JSON.stringify(task),
      secret: record.account.webhookSecret,
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const pending of this.timers) pending.timer?.cancel();
    this.timers.clear();
    await this.sender.close();
  }
}
