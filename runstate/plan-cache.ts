// Plans read once per process: a plan is immutable for its hash, so every reader in the process
// shares one parsed copy, whatever store the plan is read from.
import type { PlanRef } from '../common/types.js';
import type { PlannedItem } from '../manifest/normalize.js';
import { planIndexOutOfRange, type LoadedPlan, type PlanMeta } from './plan.js';

/**
 * Promises by key, the least recently used dropped first beyond `capacity`. Concurrent first
 * reads share one promise; a failed read is not kept (the next activity attempt reads again).
 */
export class PromiseCache<T> {
  readonly #entries = new Map<string, Promise<T>>();

  constructor(private readonly capacity: number) {}

  get(key: string, load: () => Promise<T>): Promise<T> {
    let entry = this.#entries.get(key);
    if (entry !== undefined) {
      this.#entries.delete(key);
    } else {
      entry = load();
      void entry.catch(() => this.#entries.get(key) === entry && this.#entries.delete(key));
    }
    this.#entries.set(key, entry);
    for (const oldest of this.#entries.keys()) {
      if (this.#entries.size <= this.capacity) break;
      this.#entries.delete(oldest);
    }
    return entry;
  }
}

const keyOf = (ref: PlanRef): string => `${ref.stateDir}\0${ref.planHash}`;

/** Whole plans and their metas, read once per process. */
export class PlanCache {
  readonly #plans: PromiseCache<LoadedPlan>;
  readonly #metas = new PromiseCache<PlanMeta>(16);

  constructor(
    private readonly load: (ref: PlanRef) => Promise<LoadedPlan>,
    private readonly loadMeta: (ref: PlanRef) => Promise<PlanMeta>,
    capacity = 4,
  ) {
    this.#plans = new PromiseCache(capacity);
  }

  get(ref: PlanRef): Promise<LoadedPlan> {
    return this.#plans.get(keyOf(ref), () => this.load(ref));
  }

  meta(ref: PlanRef): Promise<PlanMeta> {
    return this.#metas.get(keyOf(ref), () => this.loadMeta(ref));
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
