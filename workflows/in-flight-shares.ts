// How a run divides `max_in_flight` between its shards, so that shards never wait on each other.
//
// A shard that is still submitting holds a share. One that has submitted all its items ("handed
// off") holds only what it still had at the API then: it can never have more, since a resubmit
// reuses the slot of the item that failed. It says so again once its tail has shrunk to a
// quarter (workflows/shard.ts, releaseTail), and then holds that much. A closed shard holds
// nothing. The run starts the next shard as soon as one hands off, with what is free, and raises
// the shares of submitting shards as tails shrink and close. Shards of a run submit at the same
// pace and so finish submitting together: when the next ones waited for them to close, the rate
// limit sat idle for a whole generation time at every shard boundary (5 s of a 65 s run at 3,000
// items).
//
// What the shards may hold never adds up to more than `max_in_flight`.
import type { InFlightSharesState } from '../common/types.js';

export class InFlightShares {
  readonly #submitting = new Map<string, number>();
  readonly #tails = new Map<string, number>();

  /** `fullShare`: what a submitting shard gets while shards are still to start. */
  constructor(
    private readonly maxInFlight: number,
    private readonly fullShare: number,
    carried?: InFlightSharesState,
  ) {
    for (const [shard, share] of carried?.submitting ?? []) this.#submitting.set(shard, share);
    for (const [shard, holding] of carried?.tails ?? []) this.#tails.set(shard, holding);
  }

  /** Who holds what, for continue-as-new. */
  state(): InFlightSharesState {
    return { submitting: [...this.#submitting], tails: [...this.#tails] };
  }

  /** Shards still submitting. */
  get submitting(): number {
    return this.#submitting.size;
  }

  /** Slots no shard holds. */
  free(): number {
    return this.maxInFlight - sum(this.#submitting) - sum(this.#tails);
  }

  /** A new shard's share: the full share, or what is free if less. */
  start(shard: string): number {
    const share = Math.max(0, Math.min(this.fullShare, this.free()));
    this.#submitting.set(shard, share);
    return share;
  }

  /**
   * The shard has submitted everything and holds `holding` items at the API, or (told again)
   * its tail is down to `holding`. A tail never grows; a shard that closed holds nothing.
   */
  handOff(shard: string, holding: number): void {
    const held = this.#submitting.get(shard) ?? this.#tails.get(shard);
    if (held === undefined) return; // closed already
    this.#submitting.delete(shard);
    this.#tails.set(shard, Math.min(held, holding));
  }

  close(shard: string): void {
    this.#submitting.delete(shard);
    this.#tails.delete(shard);
  }

  /**
   * Submitting shards whose share goes up, with the new share, out of what is free. While shards
   * are still to start, shares are topped up to the full share (what is left starts the next
   * shard); once all have started, towards an even split of everything the tails do not hold.
   * A share is never lowered (a shard may already hold it), so a shard above the even split keeps
   * its share and the others get only what is free. Shards not `reachable` (still being started)
   * keep their share for now.
   */
  raise(allStarted: boolean, reachable: (shard: string) => boolean): [shard: string, share: number][] {
    const raised: [string, number][] = [];
    if (this.#submitting.size === 0) return raised;
    const target = allStarted
      ? Math.floor((this.maxInFlight - sum(this.#tails)) / this.#submitting.size)
      : this.fullShare;
    let free = this.free();
    for (const [shard, share] of this.#submitting) {
      const more = Math.min(target - share, free);
      if (more <= 0 || !reachable(shard)) continue;
      free -= more;
      raised.push([shard, share + more]);
    }
    for (const [shard, share] of raised) this.#submitting.set(shard, share);
    return raised;
  }
}

function sum(shares: Map<string, number>): number {
  let total = 0;
  for (const share of shares.values()) total += share;
  return total;
}
