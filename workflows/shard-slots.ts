// The slots a shard holds at a provider that limits tasks running at once (concurrency-cap.ts has
// the rules): how many it may hold now, which of its tasks still hold one, when the next is taken
// as free, and what a slice's answers (a refusal, the provider's queue) change. The submit lane
// (shard-submit.ts) asks it before each slice; its cap is carried in the shard's state.
import type { ShardContext } from './shard-context.js';
import * as cap from './concurrency-cap.js';
import { finishesPushed, Phase } from './tracking.js';

export class ShardSlots {
  /** The provider was full at the last refusal: nothing goes until a task finishes or the hold ends. */
  #refused: { done: number; untilMs: number } | undefined;
  #release: { samples: readonly number[]; ageMs: number | undefined } | undefined;

  constructor(private readonly ctx: ShardContext) {}

  /** Whether the provider's concurrency lets one more task go now (always, without a limit). */
  free(): boolean {
    if (!this.ctx.s.concurrency) return true;
    return !this.#fullAtLastRefusal() && this.#slots().holding < this.#cap();
  }

  /** When a queued item may go without an event to tell: a slot's release by age, a refusal's hold ending. */
  wakeAtMs(): number {
    const { s, items } = this.ctx;
    if (!s.concurrency || items.count(Phase.queued) === 0) return Number.POSITIVE_INFINITY;
    return Math.min(this.#slots().nextReleaseAtMs, this.#refused?.untilMs ?? Number.POSITIVE_INFINITY);
  }

  /**
   * A slice's answers: a refusal for the concurrency holds the lane (and takes the cap down to
   * what the provider took, where a cap is kept); a queuing provider's positions keep its queue at
   * the margin.
   */
  answered(
    overConcurrency: boolean,
    ahead: readonly number[],
    slice: { sentAtMs: number; nowMs: number },
  ): void {
    const { s, items, limits } = this.ctx;
    if (!s.concurrency) return;
    if (overConcurrency) {
      const slots = this.#slots();
      // The predecessor's tasks are counted by their ages, its webhooks going to it: a refusal
      // while some still count says the guess was early, not that the cap is too high, and the
      // shard asks again as a polled one does rather than wait for a task of its own.
      // (afterRefusal leaves a polled shard's state as it is.)
      const guessing = s.concurrency.polled || slots.handed > 0;
      if (slots.handed === 0)
        s.concurrency = cap.afterRefusal(s.concurrency, slots.holding, items.doneAtProvider());
      this.#refused = {
        done: items.doneAtProvider(),
        untilMs: cap.refusalHoldUntil(
          slice.nowMs,
          slots.nextReleaseAtMs,
          s.generationMs,
          limits.pollMinMs,
          guessing ? { atProvider: this.#notKnownFinished() } : undefined,
        ),
      };
    }
    if (ahead.length > 0)
      s.concurrency = cap.afterSubmitQueue(
        s.concurrency,
        Math.min(...ahead),
        limits.concurrency?.sharing ?? 1,
        items.doneAtProvider(),
        slice,
      );
  }

  /** The shard's tasks at the provider not known finished, its predecessor's included. */
  #notKnownFinished(): number {
    const { items, limits } = this.ctx;
    const handed = limits.concurrency?.handed?.heldSinceMs.length ?? 0;
    return items.submittedTimes().length + items.count(Phase.submitting) + handed;
  }

  #cap(): number {
    const { s, items } = this.ctx;
    return s.concurrency ? cap.capNow(s.concurrency, items.doneAtProvider()) : Number.POSITIVE_INFINITY;
  }

  #fullAtLastRefusal(): boolean {
    const refused = this.#refused;
    if (!refused) return false;
    if (this.ctx.items.doneAtProvider() > refused.done || Date.now() >= refused.untilMs)
      this.#refused = undefined;
    return this.#refused !== undefined;
  }

  /**
   * The shard's tasks holding a slot, and when the next is taken as finished: by their ages where
   * the provider refuses what it cannot start and no webhook tells sooner; a queuing provider's
   * slot counts until its task is known finished. Its predecessor's tasks count until their age
   * says they finished.
   */
  #slots(): { holding: number; nextReleaseAtMs: number; handed: number } {
    const { items, limits } = this.ctx;
    const now = Date.now();
    const own = cap.holdingSlots(
      items.submittedTimes(),
      items.count(Phase.submitting),
      now,
      this.#releaseAge(),
    );
    const heldSinceMs = limits.concurrency?.handed?.heldSinceMs;
    if (!heldSinceMs?.length) return { ...own, handed: 0 };
    const handed = cap.handedHolding(heldSinceMs, now, this.#samplesReleaseAge());
    return {
      holding: own.holding + handed.holding,
      nextReleaseAtMs: Math.min(own.nextReleaseAtMs, handed.nextReleaseAtMs),
      handed: handed.holding,
    };
  }

  /** The age past which the shard's own tasks are taken as finished: by age only where polls tell. */
  #releaseAge(): number | undefined {
    const { limits } = this.ctx;
    if (!limits.concurrency?.refused || finishesPushed(limits)) return undefined;
    return this.#samplesReleaseAge();
  }

  /**
   * The release age of the generation times the shard has now, worked out once per new sample set:
   * the slots are counted at every activation of the shard.
   */
  #samplesReleaseAge(): number | undefined {
    const { s } = this.ctx;
    if (!s.generationMs) return undefined;
    if (this.#release?.samples !== s.generationMs)
      this.#release = { samples: s.generationMs, ageMs: cap.releaseAgeMs(s.generationMs) };
    return this.#release.ageMs;
  }
}
