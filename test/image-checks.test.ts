// The image checks with real sharp: a good image passes; a wrong aspect ratio, a blank frame, a
// truncated or corrupt file and a JPEG answered for a PNG each fail the check they should, at the
// level the manifest gives it; the thumbnail is small and of the same aspect.
import sharp from 'sharp';
import { beforeAll, describe, expect, it } from 'vitest';
import { checkImage, DEFAULT_CHECK_LEVELS, type CheckFinding } from '../checks/image-checks.js';
import { inspectImage, THUMBNAIL_SIDE } from '../checks/inspect.js';

/** A noisy picture (so it is not blank) of the given size, as PNG or JPEG. */
async function picture(width: number, height: number, format: 'png' | 'jpeg' = 'png'): Promise<Buffer> {
  const noise = Buffer.alloc(width * height * 3);
  for (let k = 0; k < noise.length; k++) noise[k] = (k * 7919) % 251;
  const image = sharp(noise, { raw: { width, height, channels: 3 } });
  return format === 'png' ? image.png().toBuffer() : image.jpeg().toBuffer();
}

async function findings(bytes: Buffer, size = '16:9', ext = 'png'): Promise<CheckFinding[]> {
  const { facts } = await inspectImage(bytes);
  return checkImage(facts, { size, resolution: '1K', ext }, DEFAULT_CHECK_LEVELS);
}

let good: Buffer;
beforeAll(async () => {
  good = await picture(1024, 576);
});

describe('image checks', () => {
  it('passes a decodable PNG of the requested ratio and tier, with a thumbnail of the same aspect', async () => {
    const { facts, thumbnail } = await inspectImage(good);
    expect(facts).toMatchObject({ format: 'png', width: 1024, height: 576 });
    expect(checkImage(facts, { size: '16:9', resolution: '1K', ext: 'png' }, DEFAULT_CHECK_LEVELS)).toEqual(
      [],
    );
    const meta = await sharp(thumbnail!).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['jpeg', THUMBNAIL_SIDE, 180]);
  });

  it('fails a wrong aspect ratio', async () => {
    expect(await findings(await picture(1024, 1024))).toEqual([
      { check: 'aspect_ratio', level: 'error', message: 'is 1024x1024, not 16:9' },
    ]);
  });

  it("takes the sizes providers snap to a grid (Replicate's 4:5 megapixel: 896x1088), not a ratio further off", async () => {
    expect(await findings(await picture(896, 1088), '4:5')).toEqual([]);
    // A megapixel at 16:9 (1344x768) is 1K by its pixel count.
    expect(await findings(await picture(1344, 768), '16:9')).toEqual([]);
    expect(await findings(await picture(896, 1200), '4:5')).toEqual([
      { check: 'aspect_ratio', level: 'error', message: 'is 896x1200, not 4:5' },
    ]);
  });

  it('fails a blank frame', async () => {
    const blank = await sharp({ create: { width: 1024, height: 576, channels: 3, background: '#808080' } })
      .png()
      .toBuffer();
    expect(await findings(blank)).toEqual([expect.objectContaining({ check: 'blank', level: 'error' })]);
  });

  it('fails a truncated file and bytes that are no image', async () => {
    expect(await findings(good.subarray(0, Math.floor(good.length / 2)))).toEqual([
      expect.objectContaining({ check: 'decodes', level: 'error' }),
    ]);
    expect(await findings(Buffer.from('<html>not found</html>'))).toEqual([
      expect.objectContaining({ check: 'decodes', level: 'error' }),
    ]);
  });

  it('warns of a JPEG announced as a PNG, and of a long side off its tier', async () => {
    expect(await findings(await picture(1024, 576, 'jpeg'))).toEqual([
      { check: 'format', level: 'warn', message: 'is JPEG, announced as PNG' },
    ]);
    expect(await findings(await picture(512, 288))).toEqual([
      { check: 'resolution', level: 'warn', message: 'has a long side of 512 px, not about 1024 (1K)' },
    ]);
  });

  it('leaves out the checks set to off', async () => {
    const { facts } = await inspectImage(await picture(1024, 1024));
    const levels = { ...DEFAULT_CHECK_LEVELS, aspect_ratio: 'off' as const };
    expect(checkImage(facts, { size: '16:9', resolution: '1K', ext: 'png' }, levels)).toEqual([]);
  });
});
