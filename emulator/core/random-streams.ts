// Seeded random streams for one emulator: each concern (job futures, ids, faults, downloads,
// webhooks) draws from its own stream derived from the config's `seed`, so that, for example, the
// number of status polls (which draw server faults) does not change which jobs fail.
import { seededRandom, type Random } from './random.js';

export type { Random } from './random.js';
export { uniform } from './random.js';

/** The stream numbered `index` of `seed`; different indexes give unrelated sequences. */
export function randomStream(seed: number, index: number): Random {
  return seededRandom((seed + index * 0x9e3779b1) | 0);
}

/** A version-4 UUID from `random` (seeded, so ids repeat across runs with the same seed). */
export function seededUuid(random: Random): string {
  const bytes = new Uint8Array(16);
  for (let i = 0; i < 16; i++) bytes[i] = Math.floor(random() * 256);
  bytes[6] = (bytes[6]! & 0x0f) | 0x40;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
