// Result images of the size and entropy of real model output, for the checks' benchmarks: the
// emulator's flat drawings compress to a few hundred KB even at 4K, real results weigh 1-2 MB at
// 1K and 15-30 MB at 4K as PNG. A smooth field of colour (coarse noise scaled up) carries the
// structure, a fine grain (drawn at 1K and scaled up with the image, as an upscaler's detail is)
// the texture that keeps PNG from compressing it away; PNGs are written with adaptive row
// filters, as image libraries write them by default.
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
/** The grain's long side before it is scaled up with the image. */
const GRAIN_SIDE = 1024;

function noise(width: number, height: number, sigma: number): Promise<Buffer> {
  return sharp({
    create: {
      width,
      height,
      channels: 3,
      background: '#808080',
      noise: { type: 'gaussian', mean: 128, sigma },
    },
  })
    .png()
    .toBuffer();
}

/** `image` (any format sharp reads) scaled to width x height, as raw RGB. */
function scaled(image: Buffer, width: number, height: number): Promise<Buffer> {
  return sharp(image).resize(width, height, { kernel: 'cubic', fit: 'fill' }).raw().toBuffer();
}

export async function photoLikeImage({ width, height, format }: PhotoSpec): Promise<Buffer> {
  const field = await scaled(
    await noise(Math.ceil(width / CELL), Math.ceil(height / CELL), STRUCTURE_SIGMA),
    width,
    height,
  );
  const grainScale = Math.min(1, GRAIN_SIDE / Math.max(width, height));
  const grainImage = await noise(
    Math.round(width * grainScale),
    Math.round(height * grainScale),
    GRAIN_SIGMA,
  );
  const grain = await scaled(grainImage, width, height);
  for (let k = 0; k < field.length; k++) field[k] = Math.max(0, Math.min(255, field[k]! + grain[k]! - 128));
  const image = sharp(field, { raw: { width, height, channels: 3 } });
  return format === 'png'
    ? image.png({ adaptiveFiltering: true }).toBuffer()
    : image.jpeg({ quality: 90 }).toBuffer();
}
