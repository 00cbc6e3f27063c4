// Result images of the size and entropy of real model output, for the checks' benchmarks: the
// emulator's flat drawings compress to a few hundred KB even at 4K, real 1K-4K results weigh
// 1-40 MB. A smooth field of colour (coarse noise scaled up) carries the structure, a fine grain
// the texture that keeps PNG from compressing it away.
import sharp from 'sharp';

export type PhotoFormat = 'png' | 'jpeg';

export interface PhotoSpec {
  width: number;
  height: number;
  format: PhotoFormat;
}

/** Coarse noise cells per side: a few dozen soft shapes across the frame. */
const CELL = 32;
const STRUCTURE_SIGMA = 60;
const GRAIN_SIGMA = 2;

export async function photoLikeImage({ width, height, format }: PhotoSpec): Promise<Buffer> {
  const coarse = await sharp({
    create: {
      width: Math.ceil(width / CELL),
      height: Math.ceil(height / CELL),
      channels: 3,
      background: '#808080',
      noise: { type: 'gaussian', mean: 128, sigma: STRUCTURE_SIGMA },
    },
  })
    .png()
    .toBuffer();
  const field = await sharp(coarse).resize(width, height, { kernel: 'cubic', fit: 'fill' }).raw().toBuffer();
  const grain = await sharp({
    create: {
      width,
      height,
      channels: 3,
      background: '#808080',
      noise: { type: 'gaussian', mean: 128, sigma: GRAIN_SIGMA },
    },
  })
    .raw()
    .toBuffer();
  for (let k = 0; k < field.length; k++) field[k] = Math.max(0, Math.min(255, field[k]! + grain[k]! - 128));
  const image = sharp(field, { raw: { width, height, channels: 3 } });
  return format === 'png' ? image.png().toBuffer() : image.jpeg({ quality: 90 }).toBuffer();
}
