// Small state files (common/state-file.ts): written whole or not at all, and a damaged one is one
// clear line naming the file, or ignored where it only remembers a hint.
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UserError } from '../common/errors.js';
import { readJsonFile, writeJsonFile } from '../common/state-file.js';

const dir = () => mkdtempSync(join(tmpdir(), 'pixelmill-state-'));

describe('state files', () => {
  it('writes whole files, leaving no temp file, and reads them back', () => {
    const folder = dir();
    const file = join(folder, 'nested', 'emulator.json');
    writeJsonFile(file, { port: 4321 });
    writeJsonFile(file, { port: 4322 });
    expect(readJsonFile(file)).toEqual({ port: 4322 });
    expect(readdirSync(join(folder, 'nested'))).toEqual(['emulator.json']);
    expect(readJsonFile(join(folder, 'missing.json'))).toBeUndefined();
  });

  it('names the file when it is empty or cut short', () => {
    const folder = dir();
    const empty = join(folder, 'retry-1.json');
    const cut = join(folder, 'retry-2.json');
    writeFileSync(empty, '');
    writeFileSync(cut, '{"number": 2, "runId": "pixel');
    expect(() => readJsonFile(empty)).toThrow(UserError);
    expect(() => readJsonFile(empty)).toThrow(
      `${empty} is damaged: it is empty; remove it and run the command again`,
    );
    expect(() => readJsonFile(cut)).toThrow(new RegExp(`^${cut} is damaged: it is not valid JSON \\(`));
  });

  it('treats a damaged hint as absent when asked to', () => {
    const file = join(dir(), 'webhook.json');
    writeFileSync(file, '{"po');
    expect(readJsonFile(file, 'ignore')).toBeUndefined();
  });
});
