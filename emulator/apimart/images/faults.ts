// Result images that are wrong in the ways image models and their hosts get them wrong
// (faults.wrong_aspect_image_rate, blank_image_rate, corrupt_image_rate, jpeg_image_rate): a
// task's images are all of one kind, drawn from its id and the seed, so every download of them
// (and a restarted emulator) gives the same bytes.
import { createHash } from 'node:crypto';

export type ImageFault = 'wrong_aspect' | 'blank' | 'corrupt' | 'jpeg';

export interface ImageFaultRates {
  wrong_aspect_image_rate: number;
  blank_image_rate: number;
  corrupt_image_rate: number;
  jpeg_image_rate: number;
}

/** The injected-fault counter of each kind (`/_emulator/stats` `faults`). */
export const IMAGE_FAULT_COUNTERS = {
  blank: 'blank_image',
  wrong_aspect: 'wrong_aspect_image',
  corrupt: 'corrupt_image',
  jpeg: 'jpeg_image',
} as const satisfies Record<ImageFault, string>;

export function imageFaultOf(seed: number, taskId: string, rates: ImageFaultRates): ImageFault | undefined {
  const shares: [ImageFault, number][] = [
    ['blank', rates.blank_image_rate],
    ['wrong_aspect', rates.wrong_aspect_image_rate],
    ['corrupt', rates.corrupt_image_rate],
    ['jpeg', rates.jpeg_image_rate],
  ];
  if (shares.every(([, share]) => share <= 0)) return undefined;
  const draw = createHash('sha256').update(`${seed}/${taskId}`).digest().readUInt32BE(0) / 2 ** 32;
  let below = 0;
  for (const [fault, share] of shares) {
    below += share;
    if (draw < below) return fault;
  }
  return undefined;
}

/** The size a wrong-aspect image is drawn at instead of `size`. */
export function wrongAspectOf(size: string): string {
  return size === '1:1' || size === 'auto' ? '16:9' : '1:1';
}
