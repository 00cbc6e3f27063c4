// Result images that are wrong in the ways image models get them wrong (faults.wrong_aspect_image_rate,
// faults.blank_image_rate): a task's images are all of one kind, drawn from its id and the seed,
// so every download of them (and a restarted emulator) gives the same bytes.
import { createHash } from 'node:crypto';

export type ImageFault = 'wrong_aspect' | 'blank';

export function imageFaultOf(
  seed: number,
  taskId: string,
  rates: { wrong_aspect_image_rate: number; blank_image_rate: number },
): ImageFault | undefined {
  if (rates.wrong_aspect_image_rate <= 0 && rates.blank_image_rate <= 0) return undefined;
  const draw = createHash('sha256').update(`${seed}/${taskId}`).digest().readUInt32BE(0) / 2 ** 32;
  if (draw < rates.blank_image_rate) return 'blank';
  if (draw < rates.blank_image_rate + rates.wrong_aspect_image_rate) return 'wrong_aspect';
  return undefined;
}

/** The size a wrong-aspect image is drawn at instead of `size`. */
export function wrongAspectOf(size: string): string {
  return size === '1:1' || size === 'auto' ? '16:9' : '1:1';
}
