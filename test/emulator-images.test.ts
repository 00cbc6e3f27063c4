// Result images of the emulator: dimensions, valid PNGs, determinism, visible differences per
// prompt and index, text layout, and the byte-bounded LRU cache.
import { createHash } from 'node:crypto';
import { PNG } from 'pngjs';
import { describe, expect, it } from 'vitest';
import {
  ImageSizeError,
  RenderedImageCache,
  imageDimensions,
  renderResultPng,
  type ImageSpec,
} from '../emulator/apimart/images/render.js';
import { RgbCanvas } from '../emulator/core/images/canvas.js';
import { glyphColumns } from '../emulator/core/images/font.js';
import { encodePng } from '../emulator/core/images/png.js';
import { wrapText } from '../emulator/core/images/text-layout.js';

const spec = (overrides: Partial<ImageSpec> = {}): ImageSpec => ({
  prompt: 'A red fox in a misty forest at dawn',
  index: 0,
  size: '16:9',
  resolution: '1K',
  ...overrides,
});
const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');
const TEXT_WHITE = [250, 250, 250] as const;

function pixelAt(png: PNG, x: number, y: number): [number, number, number] {
  const i = (y * png.width + x) * 4;
  return [png.data[i] ?? -1, png.data[i + 1] ?? -1, png.data[i + 2] ?? -1];
}

/** Pixels of the region that differ between two decoded images of equal size. */
function differingPixels(a: PNG, b: PNG, region: { x0: number; y0: number; x1: number; y1: number }): number {
  let count = 0;
  for (let y = region.y0; y < region.y1; y++) {
    for (let x = region.x0; x < region.x1; x++) {
      if (pixelAt(a, x, y).join() !== pixelAt(b, x, y).join()) count++;
    }
  }
  return count;
}

function countColour(png: PNG, colour: readonly number[]): number {
  let count = 0;
  for (let i = 0; i < png.data.length; i += 4) {
    if (png.data[i] === colour[0] && png.data[i + 1] === colour[1] && png.data[i + 2] === colour[2]) count++;
  }
  return count;
}

describe('imageDimensions', () => {
  it.each([
    ['16:9', '1K', 1024, 576],
    ['9:16', '1K', 576, 1024],
    ['1:1', '2K', 2048, 2048],
    ['9:21', '1K', 439, 1024],
    ['21:9', '4K', 4096, 1755],
    ['9:16', '4K', 2304, 4096],
    ['4:5', '2K', 1638, 2048],
    ['3:2', '1K', 1024, 683],
    ['auto', '2K', 2048, 2048],
  ] as const)('%s at %s is %ix%i', (size, resolution, width, height) => {
    expect(imageDimensions(size, resolution)).toEqual({ width, height });
  });

  it.each(['16x9', '0:1', '1:0', '', '16:9:1', 'a:b'])('rejects size %j with a typed error', (size) => {
    expect(() => imageDimensions(size, '1K')).toThrow(ImageSizeError);
    try {
      imageDimensions(size, '1K');
    } catch (error) {
      expect((error as ImageSizeError).code).toBe('image_size_invalid');
      expect((error as ImageSizeError).name).toBe('ImageSizeError');
    }
  });
});

describe('encodePng', () => {
  it('encodes every pixel of the canvas, as an independent decoder reads it (CRCs checked)', () => {
    // Odd sizes and rectangles clipped at every edge: a row-stride or filter-byte slip shows.
    const canvas = new RgbCanvas(37, 23);
    canvas.fillRect(0, 0, 37, 23, [10, 20, 30]);
    canvas.fillRect(-5, 3, 12, 7, [200, 1, 2]);
    canvas.fillRect(30, 18, 20, 20, [3, 250, 4]);
    canvas.fillRect(36, 0, 1, 23, [5, 6, 255]);
    const decoded = PNG.sync.read(encodePng(canvas), { checkCRC: true });
    expect({ width: decoded.width, height: decoded.height }).toEqual({ width: 37, height: 23 });
    const mismatches: string[] = [];
    for (let y = 0; y < 23; y++)
      for (let x = 0; x < 37; x++)
        if (pixelAt(decoded, x, y).join() !== canvas.pixel(x, y).join()) mismatches.push(`${x},${y}`);
    expect(mismatches).toEqual([]);
    expect(canvas.pixel(0, 3)).toEqual([200, 1, 2]);
    expect(canvas.pixel(36, 22)).toEqual([5, 6, 255]);
    expect(canvas.pixel(31, 19)).toEqual([3, 250, 4]);
  });
});

describe('RgbCanvas', () => {
  it('draws the same pixels in bare RGB rows as in PNG rows, into memory that held other pixels', () => {
    const draw = (canvas: RgbCanvas): RgbCanvas => {
      canvas.fillRect(0, 0, 37, 23, [10, 20, 30]);
      canvas.fillRect(0, 4, 37, 9, [7, 8, 9]);
      canvas.fillRect(-5, 3, 12, 7, [200, 1, 2]);
      canvas.fillRect(30, 18, 20, 20, [3, 250, 4]);
      return canvas;
    };
    const png = draw(new RgbCanvas(37, 23));
    const rgb = draw(new RgbCanvas(37, 23, { layout: 'rgb', data: Buffer.alloc(5000, 0xab) }));
    const blank = new RgbCanvas(37, 23, { layout: 'rgb', data: Buffer.alloc(5000, 0xab) });
    expect(rgb.data.length).toBe(37 * 23 * 3);
    for (let y = 0; y < 23; y++)
      for (let x = 0; x < 37; x++) {
        expect(rgb.pixel(x, y)).toEqual(png.pixel(x, y));
        expect(blank.pixel(x, y)).toEqual([0, 0, 0]);
      }
    expect(rgb.pixel(0, 12)).toEqual([7, 8, 9]);
    expect(() => encodePng(rgb)).toThrow(/rgb, not png/);
  });
});

describe('renderResultPng', () => {
  it.each([
    ['16:9', '1K'],
    ['9:21', '1K'],
    ['1:1', '2K'],
    ['16:9', '4K'],
  ] as const)('produces a valid PNG of the dimensions of %s at %s', (size, resolution) => {
    const decoded = PNG.sync.read(renderResultPng(spec({ size, resolution })));
    expect({ width: decoded.width, height: decoded.height }).toEqual(imageDimensions(size, resolution));
  });

  it('gives the same bytes for the same spec', () => {
    const first = renderResultPng(spec({ index: 2, prompt: 'Café crème ☕ with 🍰' }));
    const second = renderResultPng(spec({ index: 2, prompt: 'Café crème ☕ with 🍰' }));
    expect(first).not.toBe(second);
    expect(sha256(first)).toBe(sha256(second));
  });

  it('differs per prompt, in colour and in drawn text', () => {
    const a = PNG.sync.read(renderResultPng(spec({ prompt: 'i' })));
    const b = PNG.sync.read(renderResultPng(spec({ prompt: 'Wide words WWW MMM fill the image' })));
    const whole = { x0: 0, y0: 0, x1: a.width, y1: a.height };
    expect(differingPixels(a, b, whole)).toBeGreaterThan(a.width * a.height * 0.5);
    // Text is drawn in one fixed colour: a longer prompt covers more pixels with it.
    expect(countColour(b, TEXT_WHITE)).toBeGreaterThan(countColour(a, TEXT_WHITE) + 5000);
  });

  it('differs per index: bands in the middle and marks in the footer', () => {
    const first = PNG.sync.read(renderResultPng(spec({ index: 0 })));
    const second = PNG.sync.read(renderResultPng(spec({ index: 1 })));
    const { width, height } = first;
    const bandArea = { x0: 0, y0: Math.floor(height * 0.2), x1: width, y1: Math.floor(height * 0.8) };
    const footer = { x0: 0, y0: Math.floor(height * 0.85), x1: width, y1: height };
    expect(differingPixels(first, second, bandArea)).toBeGreaterThan(1000);
    expect(differingPixels(first, second, footer)).toBeGreaterThan(100);
  });

  it('draws prompts with characters outside ASCII and prompts too long to fit', () => {
    const long = 'word '.repeat(500);
    for (const prompt of ['名前 ☕ 🍰 é', long, '']) {
      const decoded = PNG.sync.read(renderResultPng(spec({ prompt, size: '9:21' })));
      expect(decoded.height).toBe(1024);
    }
  });
});

describe('font', () => {
  it('has a distinct glyph for every printable ASCII character, and a placeholder for the rest', () => {
    const printable = Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i));
    const shapes = printable.map((char) => Buffer.from(glyphColumns(char)).toString('hex'));
    expect(new Set(shapes).size).toBe(95);
    expect(shapes.filter((shape) => shape === '0000000000')).toEqual(['0000000000']); // space only
    const placeholder = Buffer.from(glyphColumns('é')).toString('hex');
    expect(shapes).not.toContain(placeholder);
    expect(Buffer.from(glyphColumns('🍰')).toString('hex')).toBe(placeholder);
    expect(Buffer.from(glyphColumns('\u0007')).toString('hex')).toBe(placeholder);
  });
});

describe('wrapText', () => {
  const text = (lines: string[][]): string[] => lines.map((line) => line.join(''));

  it('wraps on words and collapses whitespace', () => {
    expect(text(wrapText('  the quick\n brown   fox jumps ', 10, 5))).toEqual([
      'the quick',
      'brown fox',
      'jumps',
    ]);
  });

  it('splits words longer than a line', () => {
    expect(text(wrapText('abcdefghijkl xy', 5, 5))).toEqual(['abcde', 'fghij', 'kl xy']);
  });

  it('ends truncated text with an ellipsis on the last line', () => {
    expect(text(wrapText('one two three four five six', 9, 2))).toEqual(['one two', 'three...']);
    expect(text(wrapText('aaaaaaaaaa bbbbbbbbbb cc', 10, 2))).toEqual(['aaaaaaaaaa', 'bbbbbbb...']);
  });

  it('counts code points, not UTF-16 units', () => {
    expect(wrapText('🍰🍰🍰 ☕', 4, 2).map((line) => line.length)).toEqual([3, 1]);
  });

  it('wraps a prompt as long as the body limit to the same grid as its visible start', () => {
    const word = 'x'.repeat(1024 * 1024);
    expect(wrapText(word, 60, 8)).toEqual(wrapText(word.slice(0, 60 * 9), 60, 8));
    const words = 'ab '.repeat(350_000);
    const lines = wrapText(words, 60, 8);
    expect(lines).toHaveLength(8);
    expect(lines[7]!.slice(-3).join('')).toBe('...');
    expect(wrapText('🍰'.repeat(500_000), 7, 3).map((line) => line.join(''))).toEqual([
      '🍰'.repeat(7),
      '🍰'.repeat(7),
      `${'🍰'.repeat(4)}...`,
    ]);
  });

  it('gives nothing when no cell fits', () => {
    expect(wrapText('abc', 0, 3)).toEqual([]);
    expect(wrapText('abc', 3, 0)).toEqual([]);
  });
});

describe('RenderedImageCache', () => {
  it('returns the same buffer on a hit without rendering again', () => {
    let renders = 0;
    const cache = new RenderedImageCache(10_000_000, (s) => {
      renders++;
      return renderResultPng(s);
    });
    const first = cache.get(spec());
    const second = cache.get(spec());
    expect(second).toBe(first);
    expect(renders).toBe(1);
    expect(cache.get(spec({ index: 1 }))).not.toBe(first);
    expect(renders).toBe(2);
    expect(cache.bytes).toBe(first.length + cache.get(spec({ index: 1 })).length);
  });

  it('evicts the least recently used images once over its byte budget', () => {
    const rendered: string[] = [];
    const cache = new RenderedImageCache(250, (s) => {
      rendered.push(s.prompt);
      return Buffer.alloc(100, s.prompt);
    });
    cache.get(spec({ prompt: 'a' }));
    cache.get(spec({ prompt: 'b' }));
    cache.get(spec({ prompt: 'a' })); // now b is the least recently used
    cache.get(spec({ prompt: 'c' }));
    expect(cache.size).toBe(2);
    expect(cache.bytes).toBe(200);
    cache.get(spec({ prompt: 'a' }));
    cache.get(spec({ prompt: 'b' }));
    expect(rendered).toEqual(['a', 'b', 'c', 'b']);
  });

  it('keys on every spec field', () => {
    let renders = 0;
    const cache = new RenderedImageCache(1_000_000, () => Buffer.alloc(10, renders++));
    for (const s of [
      spec(),
      spec({ prompt: 'x' }),
      spec({ index: 3 }),
      spec({ size: '1:1' }),
      spec({ resolution: '2K' }),
    ])
      cache.get(s);
    expect(renders).toBe(5);
  });

  it('does not keep an image larger than the whole budget', () => {
    const cache = new RenderedImageCache(50, () => Buffer.alloc(100));
    cache.get(spec());
    expect(cache.size).toBe(0);
    expect(cache.bytes).toBe(0);
  });
});
