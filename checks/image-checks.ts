// What pixelmill checks in every stored image, against what the item asked for: it decodes, its
// format is the one the result host announced, its aspect ratio is the requested `size`, its
// long side is the requested resolution tier, and it is not blank (near-uniform pixels: what
// safety filters of image models sometimes return instead of an error). Pure: the facts come
// from inspect.ts; each check's level (error, warn, off) from the manifest's `checks` block.
import { LONG_SIDE } from '../common/generation.js';

export const CHECK_NAMES = ['decodes', 'format', 'aspect_ratio', 'resolution', 'blank'] as const;
export type CheckName = (typeof CHECK_NAMES)[number];
export type CheckLevel = 'error' | 'warn' | 'off';
export type CheckLevels = Record<CheckName, CheckLevel>;

export const DEFAULT_CHECK_LEVELS: CheckLevels = {
  decodes: 'error',
  format: 'warn',
  aspect_ratio: 'error',
  resolution: 'warn',
  blank: 'error',
};

/** Width / height may differ from the requested ratio by this share (rounding to whole pixels). */
export const ASPECT_TOLERANCE = 0.02;
/** The long side (or the square root of the pixel count) may differ from its tier (1024, 2048, 4096 px) by this share. */
export const LONG_SIDE_TOLERANCE = 0.15;
/**
 * Providers size images on a grid (Replicate's FLUX: 64 px, so 4:5 at a megapixel is 896x1088,
 * 2.9% off): the ratio may be off by what snapping each side by half a grid step makes, on top.
 */
export const SIZE_GRID_PX = 64;

/** How far an image of `width` x `height` may be from the asked ratio. */
export function aspectTolerance(width: number, height: number): number {
  return Math.max(ASPECT_TOLERANCE, SIZE_GRID_PX / 2 / width + SIZE_GRID_PX / 2 / height);
}

/** An image whose every channel's standard deviation (0-255) is below this is blank. */
export const BLANK_MAX_STDEV = 2;

/**
 * Whether an image is of the tier whose long side is `tier` px: providers size a tier by its long
 * side (the first API, fal, BFL as pixelmill maps them) or by its pixel count (Replicate's FLUX
 * makes a megapixel at any ratio: 1344x768 for 16:9 at 1K), so either reading passes.
 */
function nearTier(long: number, pixels: number, tier: number): boolean {
  const bySide = Math.abs(long - tier) / tier <= LONG_SIDE_TOLERANCE;
  const byArea = Math.abs(Math.sqrt(pixels) - tier) / tier <= LONG_SIDE_TOLERANCE;
  return bySide || byArea;
}

/** What inspect.ts found in one image. */
export interface ImageFacts {
  /** sharp's name: png, jpeg, webp, gif, ... */
  format?: string;
  width?: number;
  height?: number;
  /** The largest per-channel standard deviation of its pixels (0-255). */
  stdev?: number;
  /** Why it did not decode, when it did not. */
  decodeError?: string;
}

export interface CheckFinding {
  check: CheckName;
  level: 'error' | 'warn';
  message: string;
}

export interface CheckedRequest {
  size: string;
  resolution: string;
  /** The extension the result host's content type gave (png, jpg, webp). */
  ext: string;
}

const FORMAT_OF_EXT: Record<string, string> = {
  png: 'png',
  jpg: 'jpeg',
  jpeg: 'jpeg',
  webp: 'webp',
  gif: 'gif',
};

function ratioOf(size: string): number | undefined {
  if (size === 'auto') return undefined;
  const match = /^(\d+):(\d+)$/.exec(size);
  return match ? Number(match[1]) / Number(match[2]) : undefined;
}

/** The failed checks of one image, at their levels; empty when it passes (or they are off). */
export function checkImage(facts: ImageFacts, request: CheckedRequest, levels: CheckLevels): CheckFinding[] {
  const findings: CheckFinding[] = [];
  const fail = (check: CheckName, message: string): void => {
    const level = levels[check];
    if (level !== 'off') findings.push({ check, level, message });
  };
  if (facts.decodeError !== undefined || facts.width === undefined || facts.height === undefined) {
    fail('decodes', `does not decode as an image: ${facts.decodeError ?? 'no dimensions'}`);
    return findings;
  }
  const { width, height } = facts;
  const expectedFormat = FORMAT_OF_EXT[request.ext];
  if (expectedFormat !== undefined && facts.format !== undefined && facts.format !== expectedFormat)
    fail('format', `is ${facts.format.toUpperCase()}, announced as ${expectedFormat.toUpperCase()}`);
  const ratio = ratioOf(request.size);
  if (ratio !== undefined && Math.abs(width / height - ratio) / ratio > aspectTolerance(width, height))
    fail('aspect_ratio', `is ${width}x${height}, not ${request.size}`);
  const tier = LONG_SIDE[request.resolution];
  const long = Math.max(width, height);
  if (tier !== undefined && !nearTier(long, width * height, tier))
    fail('resolution', `has a long side of ${long} px, not about ${tier} (${request.resolution})`);
  if (facts.stdev !== undefined && facts.stdev < BLANK_MAX_STDEV)
    fail('blank', `is blank (its pixels vary by ${facts.stdev.toFixed(1)} at most)`);
  return findings;
}
