// The stores' shared file helper: a body that fails must leave nothing behind once the caller has
// removed the temp file, even when it fails before the file stream has opened.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { writeHashed } from '../storage/files.js';
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
