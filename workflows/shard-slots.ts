// The slots a shard holds at a provider that limits tasks running at once (concurrency-cap.ts has
// the rules): how many it may hold now, which of its tasks still hold one, when the next is taken
// as free, and what a slice's answers (a refusal, the provider's queue) change. The submit lane
// (shard-submit.ts) asks it before each slice; its cap is carried in the shard's state.
import type { ShardContext } from './shard-context.js';
import * as asked from './asked-slots.js';
import * as cap from './concurrency-cap.js';
import { quantile } from './single-checks.js';
import { finishesPushed, Phase } from './tracking.js';

/** A shard's tasks not known finished, and the generation times that weigh their ages (asked-slots.ts). */
interface HeldWeighed {
  held: asked.HeldTasks;
  sorted: number[] | undefined;
}

export class ShardSlots {
  /**
   * The provider was full at the last refusal: nothing goes until the hold ends, or a task of the
   * shard's is known finished (`done` more than then) where that frees a slot.
   */
  #refused: { done?: number; untilMs: number } | undefined;
  #release: { samples: readonly number[]; ageMs: number | undefined } | undefined;
  #weighed: { samples: readonly number[]; sorted: number[] | undefined } | undefined;
  /** Where the submits ask for slots: when one may go as a probe, the tasks' ages saying none is free. */
  #probeAtMs = 0;

  constructor(private readonly ctx: ShardContext) {}

  /** Whether the provider's concurrency lets one more task go now (always, without a limit). */
  free(): boolean {
    if (!this.ctx.s.concurrency) return true;
    if (this.#fullAtLastRefusal()) return false;
    const asking = this.#asking();
    if (!asking) return this.#slots().holding < this.#cap();
    const now = Date.now();
    if (asking.seen - asked.expectedRunning(asking.held, now, asking.sorted) >= 1) return true;
    return asking.held.submitting === 0 && now >= this.#probeAtMs;
  }

  /**
   * A slice went. Where the submits ask for slots, the next probe (one submit the tasks' ages do
   * not say has a slot) comes a slot's interval later: the provider frees one about that often,
   * and the ages' guess is a few tasks either way, so a probe finds the slot a guess would leave
   * idle at the cost of a refused call when there is none.
   */
  sent(): void {
    const asking = this.#asking();
    if (asking) this.#probeAtMs = Date.now() + this.#slotIntervalMs(asking);
  }

  /** When a queued item may go without an event to tell: a slot's release by age, a refusal's hold ending. */
  wakeAtMs(): number {
    const { s, items } = this.ctx;
    if (!s.concurrency || items.count(Phase.queued) === 0) return Number.POSITIVE_INFINITY;
    const holdUntilMs = this.#refused?.untilMs;
    const asking = this.#asking();
    if (asking) {
      const freeAtMs = asked.nextFreeAtMs(asking.seen, asking.held, Date.now(), asking.sorted);
      const probeAtMs = asking.held.submitting === 0 ? this.#probeAtMs : Number.POSITIVE_INFINITY;
      return Math.max(holdUntilMs ?? 0, Math.min(freeAtMs, probeAtMs));
    }
    return Math.min(this.#slots().nextReleaseAtMs, holdUntilMs ?? Number.POSITIVE_INFINITY);
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
    if (overConcurrency && s.concurrency.polled) this.#refusedAsking(slice.nowMs);
    else if (overConcurrency) {
      const slots = this.#slots();
      // The predecessor's tasks are counted by their ages, its webhooks going to it: a refusal
      // while some still count says the guess was early, not that the cap is too high, and the
      // shard asks again soon rather than wait for a task of its own.
      const guessing = slots.handed > 0;
      if (!guessing) s.concurrency = cap.afterRefusal(s.concurrency, slots.holding, items.doneAtProvider());
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

  /**
   * A refusal where the submits ask for slots (asked-slots.ts): the concurrency seen is what the
   * shard expected to run then, and nothing is asked for a slot's interval (one typical generation
   * over it): a poll finding a task finished says nothing of when its slot freed.
   */
  #refusedAsking(nowMs: number): void {
    const { s, items } = this.ctx;
    if (!s.concurrency) return;
    const { held, sorted } = this.#heldWeighed();
    s.concurrency = asked.seenAtRefusal(
      s.concurrency,
      asked.expectedRunning(held, nowMs, sorted),
      items.doneAtProvider(),
    );
    const seen = asked.concurrencySeen(s.concurrency, items.doneAtProvider()) ?? 1;
    this.#refused = { untilMs: nowMs + this.#slotIntervalMs({ seen, held, sorted }) };
    this.#probeAtMs = this.#refused.untilMs;
  }

  /** How often the provider should free a slot: a typical generation over the concurrency seen. */
  #slotIntervalMs({ seen, sorted }: HeldWeighed & { seen: number }): number {
    const typicalMs = sorted ? quantile(sorted, cap.RELEASE_QUANTILE) : this.ctx.limits.pollMinMs;
    return typicalMs / Math.max(1, seen);
  }

  /** Where the submits ask for slots and a refusal has shown the provider's concurrency. */
  #asking(): (HeldWeighed & { seen: number }) | undefined {
    const { s, items } = this.ctx;
    const seen = s.concurrency && asked.concurrencySeen(s.concurrency, items.doneAtProvider());
    return seen === undefined ? undefined : { seen, ...this.#heldWeighed() };
  }

  /**
   * The shard's tasks not known finished, and the times that weigh their ages (the run's before
   * the shard has its own). Its predecessor's count by their ages only: the shard hears of none
   * finishing, so without times to go by they are taken as finished (a refusal says otherwise).
   */
  #heldWeighed(): HeldWeighed {
    const { s, items, limits } = this.ctx;
    const samples = s.generationMs ?? limits.generationMs ?? [];
    if (this.#weighed?.samples !== samples) this.#weighed = { samples, sorted: asked.agesWeighedBy(samples) };
    const { sorted } = this.#weighed;
    const handed = (sorted && limits.concurrency?.handed?.heldSinceMs) || [];
    const held = {
      heldSinceMs: [...items.submittedTimes(), ...handed],
      submitting: items.count(Phase.submitting),
    };
    return { held, sorted };
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
    const taskFinished = refused.done !== undefined && this.ctx.items.doneAtProvider() > refused.done;
    if (taskFinished || Date.now() >= refused.untilMs) this.#refused = undefined;
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
