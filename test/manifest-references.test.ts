// Local reference images in a manifest: paths and globs relative to the manifest, per item, in
// defaults and in a CSV column, each checked when the manifest loads and named by its content in
// the plan; every bad one is a `file:line:col field: path: message` line, all at once.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { beforeAll, describe, expect, it } from 'vitest';
import { generationKey } from '../catalog/generation-key.js';
import { loadManifest } from '../manifest/load.js';
import { problemsOf } from './support/manifest-problems.js';
import { tempDir } from './support/temp-dir.js';

let png: Buffer;
let jpeg: Buffer;

beforeAll(async () => {
  png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#c01020' } })
    .png()
    .toBuffer();
  jpeg = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#2040c0' } })
    .jpeg()
    .toBuffer();
});

function catalog(manifest: string[], files: Record<string, string | Buffer> = {}): string {
  const dir = tempDir();
  mkdirSync(join(dir, 'photos'));
  writeFileSync(join(dir, 'photos', 'chair.png'), png);
  writeFileSync(join(dir, 'photos', 'chair-side.jpg'), jpeg);
  writeFileSync(join(dir, 'photos', 'lamp.png'), png);
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
  writeFileSync(join(dir, 'm.yaml'), ['name: refs', ...manifest].join('\n'));
  return join(dir, 'm.yaml');
}

describe('local reference images', () => {
  it('names each file by its content, expands globs in order, keeps URLs, and lists each file once', () => {
    const loaded = loadManifest(
      catalog([
        'defaults: { image_urls: [photos/lamp.png] }',
        'items:',
        '  - { id: a, prompt: chair, image_urls: ["photos/chair*", "https://cdn.example.test/x.png"] }',
        '  - { id: b, prompt: lamp }',
        '  - { id: c, prompt: chair again, image_urls: [photos/chair.png] }',
      ]),
    );
    const [a, b, c] = loaded.items;
    expect(a!.image_urls).toEqual([
      expect.stringMatching(/^pixelmill-ref:[0-9a-f]{64}\.jpg$/), // chair-side.jpg sorts first
      expect.stringMatching(/^pixelmill-ref:[0-9a-f]{64}\.png$/),
      'https://cdn.example.test/x.png',
    ]);
    // lamp.png and chair.png have the same bytes: one reference.
    expect(b!.image_urls).toEqual([a!.image_urls![1]]);
    expect(c!.image_urls).toEqual([a!.image_urls![1]]);
    expect(loaded.references.map((ref) => ref.ext).sort()).toEqual(['jpg', 'png']);
    expect(JSON.stringify(loaded.items)).not.toContain('photos/');
  });

  it('changes the generation key and the manifest hash when a photo is replaced under its name', () => {
    const file = catalog(['items:', '  - { id: a, prompt: chair, image_urls: [photos/chair.png] }']);
    const before = loadManifest(file);
    writeFileSync(join(file, '..', 'photos', 'chair.png'), jpeg);
    const after = loadManifest(file);
    expect(generationKey(after.items[0]!)).not.toBe(generationKey(before.items[0]!));
    expect(after.hash).not.toBe(before.hash);
  });

  it('reports every unusable reference at its place', () => {
    const file = catalog(
      [
        'items:',
        '  - { id: a, prompt: x, image_urls: [photos/missing.png] }',
        '  - { id: b, prompt: x, image_urls: [photos] }',
        '  - { id: c, prompt: x, image_urls: [notes.txt] }',
        '  - { id: d, prompt: x, image_urls: ["photos/*.gif"] }',
        '  - { id: e, prompt: x, image_urls: ["ftp://example.test/a.png"] }',
        '  - { id: f, prompt: x, image_urls: [empty.png] }',
        `  - { id: g, prompt: x, image_urls: ["photos/*", "photos/*", "photos/*", "photos/*", "photos/*", "photos/*"] }`,
      ],
      { 'notes.txt': 'a note', 'empty.png': '' },
    );
    expect(problemsOf(file).map((line) => line.replace(/^.*[/\\]m\.yaml:/, 'm.yaml:'))).toEqual([
      'm.yaml:3:38 items[0].image_urls[0]: photos/missing.png: file not found',
      'm.yaml:4:38 items[1].image_urls[0]: photos: is a folder, not an image file (a glob such as photos/*.jpg takes its images)',
      'm.yaml:5:38 items[2].image_urls[0]: notes.txt: is not an image (PNG, JPEG, WebP or GIF, by its first bytes)',
      'm.yaml:6:38 items[3].image_urls[0]: photos/*.gif: no file matches this pattern',
      'm.yaml:7:38 items[4].image_urls[0]: must be an http(s) URL or a local image file',
      'm.yaml:8:38 items[5].image_urls[0]: empty.png: is empty',
      'm.yaml:9:38 items[6].image_urls: 18 reference images once globs are expanded, over the limit of 15',
    ]);
  });

  it("takes a reference already in the run's store as it is (retry-failed's manifests name them so)", () => {
    const uri = `pixelmill-ref:${'b'.repeat(64)}.png`;
    const loaded = loadManifest(catalog(['items:', `  - { id: a, prompt: x, image_urls: ["${uri}"] }`]));
    expect(loaded.items[0]!.image_urls).toEqual([uri]);
    expect(loaded.references).toEqual([]);
  });

  it('refuses more than 15 entries as written, before reading any file', () => {
    const many = catalog([
      'items:',
      `  - { id: h, prompt: x, image_urls: [${Array(16).fill('photos/lamp.png').join(', ')}] }`,
    ]);
    expect(problemsOf(many)).toEqual([
      expect.stringMatching(/m\.yaml:3:\d+ items\[0\]\.image_urls: must have at most 15 entries$/),
    ]);
  });

  it('reads a CSV column of paths relative to the manifest, and locates its problems at the row', () => {
    const file = catalog(['items_file: items.csv'], {
      'items.csv': 'id,prompt,image_urls\na,chair,photos/chair.png|photos/lamp.png\nb,lamp,photos/nope.png\n',
    });
    expect(problemsOf(file)).toEqual([
      expect.stringMatching(/items\.csv:3:1 row 2 image_urls\[0\]: photos\/nope\.png: file not found$/),
    ]);
  });
});
