// Colours of a result image, derived from its prompt so that different prompts look different
// at a glance while the same prompt always gives the same colours.
import type { Rgb } from './canvas.js';

export interface Palette {
  light: Rgb;
  dark: Rgb;
  mark: Rgb;
  text: Rgb;
  shadow: Rgb;
}

/** 32-bit FNV-1a over the UTF-8 bytes: stable across runs and platforms. */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

export function hslToRgb(hue: number, saturation: number, lightness: number): Rgb {
  const chroma = (1 - Math.abs(2 * lightness - 1)) * saturation;
  const sector = (((hue % 360) + 360) % 360) / 60;
  const second = chroma * (1 - Math.abs((sector % 2) - 1));
  const [r, g, b] =
    sector < 1
      ? [chroma, second, 0]
      : sector < 2
        ? [second, chroma, 0]
        : sector < 3
          ? [0, chroma, second]
          : sector < 4
            ? [0, second, chroma]
            : sector < 5
              ? [second, 0, chroma]
              : [chroma, 0, second];
  const offset = lightness - chroma / 2;
  const channel = (value: number): number => Math.round((value + offset) * 255);
  return [channel(r), channel(g), channel(b)];
}

export function paletteFor(prompt: string): Palette {
  const hue = fnv1a(prompt) % 360;
  return {
    light: hslToRgb(hue, 0.55, 0.52),
    dark: hslToRgb(hue, 0.55, 0.4),
    mark: hslToRgb(hue + 180, 0.7, 0.6),
    text: [250, 250, 250],
    shadow: hslToRgb(hue, 0.6, 0.12),
  };
}
