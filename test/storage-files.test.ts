// The stores' shared file helper: a body that fails must leave nothing behind once the caller has
// removed the temp file, even when it fails before the file stream has opened. And the local
// store's reader of what it stored (the checks' decode reads the file, not memory).
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { writeHashed } from '../storage/files.js';
import { LocalResultStore } from '../storage/local.js';
import { rejection } from './support/assertions.js';

describe('writeHashed', () => {
  it('has closed the file when it rejects, so removing it leaves nothing (a cut-off body)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pixelmill-files-'));
    try {
      // Without waiting for the file stream to close, about one in four of these left a file that
      // its late open created after the removal.
      for (let i = 0; i < 100; i++) {
        const file = join(dir, `image-${i}.png.tmp`);
        const cutOff = new Readable({
          read() {
            this.destroy(new Error('connection reset'));
          },
        });
        expect(await rejection(writeHashed(cutOff, file))).toMatchObject({ message: 'connection reset' });
        // At once, as a removal that wins the race against the open on another thread would.
        rmSync(file, { force: true });
      }
      await new Promise((resolve) => setTimeout(resolve, 50)); // any late open would have landed
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('LocalResultStore.put', () => {
  it('hands its reader the stored file, whole, once it is in place', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pixelmill-files-'));
    try {
      const store = new LocalResultStore(dir);
      const image = Buffer.from('not really a png, but bytes all the same');
      let seen: { file: string; bytes: Buffer } | undefined;
      await store.put('a/b.png', Readable.from([image]), {}, async (file) => {
        seen = { file, bytes: readFileSync(file) };
      });
      expect(seen).toEqual({ file: join(dir, 'a', 'b.png'), bytes: image });
      const failure = await rejection(
        store.put('a/c.png', Readable.from([image]), {}, () =>
          Promise.reject(new Error('thumbnail refused')),
        ),
      );
      expect(failure).toMatchObject({ message: 'thumbnail refused' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
