// Helpers every provider's request mapping shares: the fields pixelmill sets itself may not come
// again through `params` (one source for each field of the request), and aspect ratios and
// resolutions turned into the pixel sizes some providers ask for (the long side of the tier, as
// the image checks expect).
import { LONG_SIDE } from '../common/generation.js';
import type { MappingProblem } from './types.js';

/** `params` entries that a mapped field (`owner` names which manifest field sets it) already sets. */
export function paramsClashes(
  params: Record<string, unknown> | undefined,
  mapped: Readonly<Record<string, string>>,
): MappingProblem[] {
  if (params === undefined) return [];
  return Object.keys(params)
    .filter((field) => Object.hasOwn(mapped, field))
    .map((field) => ({
      path: ['params', field],
      message: `is set from the item's ${mapped[field]}; set that instead`,
    }));
}

/** Megapixels of each resolution tier: 1K is a 1024x1024 image's worth, each tier four times the last. */
export const MEGAPIXELS: Readonly<Record<string, number>> = { '1K': 1.05, '2K': 4.19, '4K': 16.78 };

/** `W:H` as numbers, or undefined for `auto` and malformed text. */
export function aspectRatio(size: string): { w: number; h: number } | undefined {
  const match = /^(\d{1,4}):(\d{1,4})$/.exec(size);
  if (!match) return undefined;
  const w = Number(match[1]);
  const h = Number(match[2]);
  return w > 0 && h > 0 ? { w, h } : undefined;
}

/**
 * Width and height with the aspect ratio `size` and the long side of `resolution`, each a
 * multiple of `step` (models work in latent blocks of 8, 16 or 32 pixels).
 */
export function pixelSize(
  size: string,
  resolution: string,
  step: number,
): { width: number; height: number } | undefined {
  const ratio = aspectRatio(size);
  const long = LONG_SIDE[resolution];
  if (!ratio || long === undefined) return undefined;
  const snap = (value: number) => Math.max(step, Math.round(value / step) * step);
  const wanted = ratio.w / ratio.h;
  // The long side may move by a step where that keeps the ratio truer: the image checks allow 2%,
  // and snapping the short side alone can cost more (21:9 at 1024 in 32-px steps: 1024x448, 2.04%).
  const sizes = [long - step, long, long + step].map((side) =>
    wanted >= 1
      ? { width: snap(side), height: snap(side / wanted) }
      : { width: snap(side * wanted), height: snap(side) },
  );
  const error = (size: { width: number; height: number }) =>
    Math.abs(size.width / size.height - wanted) / wanted;
  const exact = sizes[1]!;
  return error(exact) <= RATIO_SLACK
    ? exact
    : sizes.reduce((best, size) => (error(size) < error(best) ? size : best));
}

/** Within this share of the asked ratio (under the checks' 2%, with room for rounding), the tier's exact long side is kept. */
const RATIO_SLACK = 0.018;
