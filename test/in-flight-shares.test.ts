// How a run divides max_in_flight between shards (workflows/in-flight-shares.ts): the next shard
// starts when one has submitted everything, and the shares never add up to more than the limit.
import { describe, expect, it } from 'vitest';
import { InFlightShares } from '../workflows/in-flight-shares.js';

const everyShard = (): boolean => true;

describe('InFlightShares', () => {
  it('gives full shares while they fit, and what is left to the last', () => {
    const shares = new InFlightShares(503, 168);
    expect([shares.start('a'), shares.start('b'), shares.start('c')]).toEqual([168, 168, 167]);
    expect(shares.free()).toBe(0);
    expect(shares.submitting).toBe(3);
  });

  it('frees what a handed-off shard no longer holds, for the next shard', () => {
    const shares = new InFlightShares(300, 100);
    for (const shard of ['a', 'b', 'c']) shares.start(shard);
    shares.handOff('a', 60);
    expect(shares.submitting).toBe(2);
    expect(shares.free()).toBe(40);
    expect(shares.start('d')).toBe(40);
    expect(shares.free()).toBe(0);
    // The tail closes: its 60 slots top the new shard up to the full share, no further.
    shares.close('a');
    expect(shares.raise(false, everyShard)).toEqual([['d', 100]]);
    expect(shares.free()).toBe(0);
  });

  it('frees what a tail lets go of when it is told again, and never lets a tail grow', () => {
    // Both shards hand off holding every slot: nothing is free for the third until a tail shrinks.
    const shares = new InFlightShares(100, 50);
    shares.start('a');
    shares.start('b');
    shares.handOff('a', 50);
    shares.handOff('b', 50);
    expect(shares.free()).toBe(0);
    shares.handOff('a', 3);
    expect(shares.free()).toBe(47);
    expect(shares.start('c')).toBe(47);
    shares.handOff('b', 60);
    expect(shares.free()).toBe(0);
  });

  it('never hands a tail more than its share, whatever it reports', () => {
    const shares = new InFlightShares(100, 50);
    shares.start('a');
    shares.start('b');
    shares.handOff('a', 80);
    expect(shares.free()).toBe(0);
  });

  it('splits all the tails do not hold between the submitting shards once every shard has started', () => {
    const shares = new InFlightShares(300, 100);
    for (const shard of ['a', 'b', 'c']) shares.start(shard);
    shares.handOff('a', 30);
    shares.close('b');
    expect(shares.raise(true, everyShard)).toEqual([['c', 270]]);
    expect(shares.free()).toBe(0);
    shares.close('a');
    expect(shares.raise(true, everyShard)).toEqual([['c', 300]]);
  });

  it('raises a shard towards the even split only out of what is free, never past the limit', () => {
    // The first handoff comes while the other shards still submit with their full shares: the last
    // shard starts on the handed-off slots, and the even split of what the tail leaves (700 / 3)
    // is more than is free. The last shard gets nothing more until the others let go.
    const shares = new InFlightShares(1000, 334);
    for (const shard of ['a', 'b', 'c']) shares.start(shard);
    shares.handOff('b', 300);
    expect(shares.start('d')).toBe(34);
    expect(shares.raise(true, everyShard)).toEqual([]);
    expect(shares.free()).toBe(0);
    // 'a' hands off holding 100: its 234 slots go to 'c' and 'd', 'd' first up to the even split.
    shares.handOff('a', 100);
    expect(shares.raise(true, everyShard)).toEqual([['d', 268]]);
    expect(shares.free()).toBe(0);
    // The larger tail closes: both submitting shards reach the even split of the 900 left.
    shares.close('b');
    expect(shares.raise(true, everyShard)).toEqual([
      ['c', 450],
      ['d', 450],
    ]);
    expect(shares.free()).toBe(0);
  });

  it('leaves a shard that is still being started at its share, and ignores late reports', () => {
    const shares = new InFlightShares(200, 100);
    shares.start('a');
    shares.start('b');
    shares.close('a');
    expect(shares.raise(true, (shard) => shard !== 'b')).toEqual([]);
    expect(shares.raise(true, everyShard)).toEqual([['b', 200]]);
    // A handoff that arrives after the shard closed changes nothing.
    shares.handOff('a', 10);
    expect(shares.free()).toBe(0);
  });
});
