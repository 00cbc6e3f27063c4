// Plans read once per process: a plan is immutable for its hash, so every reader in the process
// shares one parsed copy, whatever store the plan is read from.
import type { PlanRef } from '../common/types.js';
import type { PlannedItem } from '../manifest/normalize.js';
import { planIndexOutOfRange, type LoadedPlan } from './plan.js';

/** Concurrent first reads share one promise; the least recently used plan goes first. */
export class PlanCache {
  readonly #plans = new Map<string, Promise<LoadedPlan>>();

  constructor(
    private readonly load: (ref: PlanRef) => Promise<LoadedPlan>,
    private readonly capacity = 4,
  ) {}

  get(ref: PlanRef): Promise<LoadedPlan> {
    const key = `${ref.stateDir}\0${ref.planHash}`;
    let plan = this.#plans.get(key);
    if (plan !== undefined) {
      this.#plans.delete(key);
    } else {
      plan = this.load(ref);
      // A failed read is not cached: the next activity attempt reads again.
      void plan.catch(() => this.#plans.get(key) === plan && this.#plans.delete(key));
    }
    this.#plans.set(key, plan);
    while (this.#plans.size > this.capacity) {
      const oldest = this.#plans.keys().next().value;
      if (oldest === undefined) break;
      this.#plans.delete(oldest);
    }
    return plan;
  }

  /** The item at `index`, or a non-retryable failure naming the index. */
  async item(ref: PlanRef, index: number): Promise<{ plan: LoadedPlan; item: PlannedItem }> {
    const plan = await this.get(ref);
    const item = plan.items[index];
    if (item === undefined) {
      throw planIndexOutOfRange(index, plan.items.length);
    }
    return { plan, item };
  }
}
