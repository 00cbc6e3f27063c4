// The first API's result images byte for byte: downloads are checked by hash across retries and
// emulator restarts, so a change to how they are drawn must leave these hashes as they are.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { renderResultPng, type ImageSpec } from '../emulator/apimart/images/render.js';

const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

/** A 4x2 thumbnail: red, green, blue, white above; black, grey, yellow, cyan below. */
const reference = {
  sha256: 'a'.repeat(64),
  width: 4,
  height: 2,
  rgb: Buffer.from([
    255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255, 0, 0, 0, 128, 128, 128, 255, 255, 0, 0, 255, 255,
  ]),
};

const base: ImageSpec = {
  prompt: 'A red fox in a misty forest at dawn',
  index: 0,
  size: '16:9',
  resolution: '1K',
};

const PINNED: [string, ImageSpec, string][] = [
  ['a landscape at 1K', base, '05442ca3200f2642d4949f69c8fff5a41805bb8a3562a451ff4072440d73fbbc'],
  [
    'a portrait, third image, prompt outside ASCII',
    { ...base, index: 2, size: '9:16', prompt: 'Café crème ☕ with 🍰' },
    'a0ca9a130da73f6b887bceaa08242ae4640905a191968e9675c056fbe5fb475e',
  ],
  [
    'a long prompt, square at 2K',
    { ...base, size: '1:1', resolution: '2K', prompt: 'word '.repeat(400) },
    '8d5205c472b1f9b11788a9db675720aa467853040b10e5cf40c87ae1d3779b28',
  ],
  [
    'a reference thumbnail',
    { ...base, size: '4:5', reference },
    '908cd6d2d8af2936ce16d13007873302ac3898baceb9f345969b69917ff89b89',
  ],
  [
    'the blank fault',
    { ...base, fault: 'blank' },
    '724f22f21556539a270cf70d5064114f511aa4da13a10a821e9310b48f89985d',
  ],
  [
    'the wrong-aspect fault',
    { ...base, index: 1, fault: 'wrong_aspect' },
    '62c1be4b1b3ce855fe8ffe9e5bb82f7bdaf43e342b983e8b6b5f74078b411c11',
  ],
  [
    'the corrupt fault',
    { ...base, size: '3:2', fault: 'corrupt' },
    '123e9f4a3da18765dabbae5f8fa5a092bcf98b7e402a4168477a72fdfca77615',
  ],
  [
    'a strip too thin for any text',
    { ...base, size: '9999:1', index: 3 },
    '0da9e65d13c5e4b783585a163055536aac907b15a052ebc2a416d9feded06e69',
  ],
  [
    'a column too narrow for any text',
    { ...base, size: '1:1000', index: 1 },
    'b61c4328faad164b961493917a5f39543397c46fedaf8caba4b4a11bcd25bc8d',
  ],
];

describe('renderResultPng bytes', () => {
  it.each(PINNED)('are pinned for %s', (_name, spec, hash) => {
    expect(sha256(renderResultPng(spec))).toBe(hash);
  });
});
