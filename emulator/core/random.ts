// A seeded pseudo-random source (sfc32), so that `seed` in the emulator config makes every random
// choice (durations, injected faults, failures) reproducible for the same sequence of requests.

export type Random = () => number;

export function seededRandom(seed: number): Random {
  let a = 0x9e3779b9 ^ seed;
  let b = 0x243f6a88 ^ Math.imul(seed, 0x85ebca6b);
  let c = 0xb7e15162 ^ Math.imul(seed, 0xc2b2ae35);
  let d = seed >>> 0;
  const next = (): number => {
    a >>>= 0;
    b >>>= 0;
    c >>>= 0;
    d >>>= 0;
    const t = (a + b + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = ((c << 21) | (c >>> 11)) >>> 0;
    c = (c + t) >>> 0;
    return t / 4294967296;
  };
  // The first outputs of sfc32 correlate with the seed; discard them.
  for (let i = 0; i < 12; i++) next();
  return next;
}

/** A uniform draw from [min, max]. */
export function uniform(random: Random, [min, max]: readonly [number, number]): number {
  return min + (max - min) * random();
}
