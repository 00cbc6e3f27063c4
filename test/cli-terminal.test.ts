// The live display as a user sees it (issue #12): `pixelmill run` in a pseudo-terminal 60
// columns wide (node-pty), its output rendered by a headless terminal emulator (xterm.js), so
// what is asserted is the screen, after every cursor movement and erased line. An unreachable
// API, a key the API refuses, and Ctrl-C once (the workers finish what they run) and twice
// (leave at once), each against the real CLI, a real Temporal dev server and the emulator over
// HTTP.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawn as spawnPty, type IPty } from '@lydell/node-pty';
import xterm from '@xterm/headless';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, cliSandbox, type CliSandbox } from './support/cli.js';
import { startTestEmulator } from './support/emulator.js';

const COLUMNS = 60;
const KEY = 'sk-live-terminal-key';

let sandbox: CliSandbox;
beforeAll(async () => {
  sandbox = await cliSandbox();
});
afterAll(async () => {
  await sandbox?.stop();
});

/** The CLI in a pseudo-terminal, and the screen a terminal would show for what it printed. */
class TerminalSession {
  readonly #pty: IPty;
  readonly #terminal = new xterm.Terminal({
    cols: COLUMNS,
    rows: 40,
    scrollback: 1000,
    allowProposedApi: true,
  });
  #written = Promise.resolve();
  readonly exited: Promise<number>;

  constructor(args: string[], env: NodeJS.ProcessEnv) {
    this.#pty = spawnPty(process.execPath, [CLI, ...args], {
      name: 'xterm-256color',
      cols: COLUMNS,
      rows: 40,
      cwd: sandbox.dir,
      env: { ...sandbox.env, TERM: 'xterm-256color', ...env } as Record<string, string>,
    });
    this.#pty.onData((data) => {
      this.#written = new Promise((resolve) => this.#terminal.write(data, resolve));
    });
    this.exited = new Promise((resolve) => this.#pty.onExit(({ exitCode }) => resolve(exitCode)));
  }

  /** Every row of the screen and its scrollback, as shown. */
  async screen(): Promise<string[]> {
    await this.#written;
    const buffer = this.#terminal.buffer.active;
    const rows: string[] = [];
    for (let i = 0; i < buffer.length; i++) rows.push(buffer.getLine(i)?.translateToString(true) ?? '');
    while (rows.length > 0 && rows.at(-1) === '') rows.pop();
    return rows;
  }

  /** The screen as text: rows the terminal wrapped joined back, the others by a space. */
  async text(): Promise<string> {
    await this.#written;
    const buffer = this.#terminal.buffer.active;
    let text = '';
    for (let i = 0; i < buffer.length; i++) {
      const line = buffer.getLine(i);
      if (!line) continue;
      text += (line.isWrapped ? '' : ' ') + line.translateToString(!buffer.getLine(i + 1)?.isWrapped);
    }
    return text.trim();
  }

  /** Waits until `pattern` is in the screen's text. */
  async waitFor(pattern: RegExp, timeoutMs = 60_000): Promise<string[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const lines = await this.screen();
      if (pattern.test(await this.text())) return lines;
      if (Date.now() > deadline) throw new Error(`no ${pattern} on the screen:\n${lines.join('\n')}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  ctrlC(): void {
    this.#pty.write('\x03');
  }

  kill(): void {
    this.#pty.kill('SIGKILL');
  }
}

function writeManifest(name: string, items: number): void {
  const lines = Array.from({ length: items }, (_, i) => `  - { id: ${name}-${i}, prompt: "${name} ${i}" }`);
  writeFileSync(
    join(sandbox.dir, `${name}.yaml`),
    [`name: ${name}`, `output: ./out-${name}`, 'items:', ...lines].join('\n'),
  );
}

/** The live frame's counts, wherever the display wrapped them. */
function countsOnScreen(lines: string[]): string[] {
  return lines
    .join(' · ')
    .split(' · ')
    .filter((part) => /^(queued|submitted|processing|storing|completed|failed) \d+$/.test(part.trim()));
}

describe('the live display in a terminal 60 columns wide', () => {
  it('shows that the API cannot be reached, counts nothing as submitted, and leaves on a second Ctrl-C', async () => {
    const gone = await startTestEmulator({});
    const url = gone.url;
    await gone.close();
    writeManifest('unreachable', 2);
    const session = new TerminalSession(['run', 'unreachable.yaml'], {
      PIXELMILL_API_BASE_URL: url,
      PIXELMILL_API_KEY: KEY,
    });
    try {
      const lines = await session.waitFor(
        /retrying: POST \/v1\/images\/generations failed: network error ECONNREFUSED/,
      );
      // Every line fits, and no count is cut in the middle of its word.
      for (const line of lines) expect(line.length, line).toBeLessThanOrEqual(COLUMNS);
      const counts = countsOnScreen(lines.slice(-12));
      expect(counts).toContain('queued 2');
      expect(counts).toContain('submitted 0');

      session.ctrlC();
      await session.waitFor(
        /stopping: letting .* finish \(cancelled after 10 s\); Ctrl-C again to leave now/,
      );
      session.ctrlC();
      expect(await session.exited).toBe(130);
      const after = await session.text();
      expect(after).toMatch(
        /stopped following pixelmill\/unreachable; it is durable: run the same command again/,
      );
    } finally {
      session.kill();
    }
  }, 120_000);

  it('shows a run paused because the API refused its key (401)', async () => {
    const emulator = await startTestEmulator({
      accounts: [{ id: 'acct_t', credits: 1000, keys: [{ key: KEY }] }],
    });
    writeManifest('refused', 3);
    const session = new TerminalSession(['run', 'refused.yaml'], {
      PIXELMILL_API_BASE_URL: emulator.url,
      PIXELMILL_API_KEY: 'sk-live-not-the-key',
    });
    try {
      const lines = await session.waitFor(/the API refused the key \(401\)/);
      const screen = await session.text();
      expect(screen).toMatch(/pixelmill\/refused\s+paused/);
      expect(countsOnScreen(lines.slice(-12))).toContain('failed 0');
      expect(screen).not.toContain('sk-live-not-the-key');
      session.ctrlC();
      session.ctrlC();
      expect(await session.exited).toBe(130);
    } finally {
      session.kill();
    }
  }, 120_000);

  it('on Ctrl-C lets the downloads in flight finish, says so, then leaves with the resume hint', async () => {
    // Tasks finish at once and downloads crawl: when Ctrl-C comes, images are being fetched.
    const emulator = await startTestEmulator({
      time_scale: 0.01,
      accounts: [{ id: 'acct_t', credits: 100_000, keys: [{ key: KEY }] }],
      rate_limits: { submit: { per_second: 1000, burst: 1000 }, query: { per_second: 1000, burst: 1000 } },
      faults: { slow_download_kbps: 20 },
    });
    writeManifest('slow', 6);
    const session = new TerminalSession(['run', 'slow.yaml'], {
      PIXELMILL_API_BASE_URL: emulator.url,
      PIXELMILL_API_KEY: KEY,
    });
    try {
      // Storing starts with the task's GET; a few seconds later its images are downloading.
      await session.waitFor(/storing [1-9]/);
      await new Promise((resolve) => setTimeout(resolve, 4000));
      session.ctrlC();
      await session.waitFor(/stopping: letting .* finish/);
      expect(await session.text()).toMatch(
        /stopping: letting \d+ downloads?( and .*)? finish \(cancelled after 10 s\); Ctrl-C again to leave now/,
      );
      expect(await session.exited).toBe(130);
      expect(await session.text()).toMatch(
        /stopped following pixelmill\/slow; it is durable: run the same command again to resume it/,
      );
    } finally {
      session.kill();
    }
  }, 120_000);
});
