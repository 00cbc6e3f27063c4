// Test helpers for the emulator: start one on 127.0.0.1 port 0 with config overrides and have it
// closed automatically, a manual clock to move emulated time without sleeping, a raw HTTP helper
// that returns status, headers and parsed JSON, a check of error texts against the catalogue, and
// a webhook receiver.
//
// Cleanup: started inside a test, the emulator closes when that test finishes; started in a
// beforeAll (or at file level), it closes in this module's afterAll for the importing file.
import { afterAll, expect, onTestFinished } from 'vitest';
import type { Language } from '../../common/generation.js';
import type { IncomingHttpHeaders } from 'node:http';
import { systemClock, type Clock, type Timer } from '../../emulator/core/clock.js';
import { MESSAGES, type MessageId } from '../../emulator/apimart/i18n.js';
import { startEmulator, type EmulatorConfigOverrides, type RunningEmulator } from '../../emulator/index.js';
import { startLoopbackServer } from './loopback-server.js';
import { sendRaw, type RawResponse } from './raw-http.js';

const fileScoped: RunningEmulator[] = [];
afterAll(async () => {
  await Promise.all(fileScoped.splice(0).map((emulator) => emulator.close()));
});

export interface TestEmulatorOptions {
  clock?: Clock;
  /** Receives the emulator's reports of unexpected internal errors (default: stderr). */
  log?: (line: string) => void;
  /**
   * The test context's hook, for a test that runs concurrently with others (vitest cannot tell
   * which of them the global onTestFinished belongs to).
   */
  onTestFinished?: (close: () => Promise<void>) => void;
}

export async function startTestEmulator(
  config: EmulatorConfigOverrides = {},
  { onTestFinished: closeWithTest = onTestFinished, ...options }: TestEmulatorOptions = {},
): Promise<RunningEmulator> {
  const emulator = await startEmulator({ config: { host: '127.0.0.1', port: 0, ...config }, ...options });
  try {
    closeWithTest(() => emulator.close());
  } catch {
    // Not inside a test: close with the file.
    fileScoped.push(emulator);
  }
  return emulator;
}

/** A clock that moves only when told to; timers due by the new time fire in order on advance(). */
export class ManualClock implements Clock {
  private timers: { at: number; seq: number; fn: () => void; cancelled: boolean }[] = [];
  private seq = 0;

  constructor(private time = Date.UTC(2026, 0, 1)) {}

  now(): number {
    return this.time;
  }

  setTimeout(fn: () => void, ms: number): Timer {
    const timer = { at: this.time + Math.max(0, ms), seq: this.seq++, fn, cancelled: false };
    this.timers.push(timer);
    return { cancel: () => void (timer.cancelled = true) };
  }

  /** When the timers not yet fired nor cancelled are due, earliest first. */
  pendingTimes(): number[] {
    return this.timers
      .filter((t) => !t.cancelled)
      .map((t) => t.at)
      .sort((a, b) => a - b);
  }

  advance(ms: number): void {
    const target = this.time + ms;
    for (;;) {
      const due = this.timers
        .filter((t) => !t.cancelled && t.at <= target)
        .sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.time = due.at;
      due.fn();
    }
    this.time = target;
  }
}

export type { RawResponse };

export interface RawRequest {
  /** Any method token; default GET, or POST when there is a body. */
  method?: string;
  /** Sent as `Authorization: Bearer <key>`; omit for no header. */
  key?: string;
  /** An object is sent as JSON; a string or Buffer is sent as is. */
  body?: unknown;
  headers?: Record<string, string>;
}

export async function call(baseUrl: string, path: string, options: RawRequest = {}): Promise<RawResponse> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
  return sendRaw(`${baseUrl}${path}`, { method: options.method, headers, body: options.body });
}

/** Submits through raw HTTP and returns the new task id; fails the test unless the answer is 200. */
export async function submitTask(emulator: RunningEmulator, key: string, body: object): Promise<string> {
  const response = await call(emulator.url, '/v1/images/generations', { key, body });
  expect(response.status, response.text).toBe(200);
  return response.json.data[0].task_id as string;
}

/**
 * Asserts that `message` is the catalogue text of `id` in `language` with every variable filled
 * (a `{name}` left over, or a text of another language, fails).
 */
export function expectCatalogueText(message: unknown, id: MessageId, language: Language): void {
  expect(typeof message).toBe('string');
  expect(message).not.toMatch(/\{\w+\}/);
  const pattern = MESSAGES[id][language]
    .split(/\{\w+\}/)
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('.+');
  expect(message).toMatch(new RegExp(`^${pattern}$`));
}

export interface ReceivedWebhook {
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The given clock's time on arrival. */
  at: number;
}

/**
 * A webhook receiver on 127.0.0.1:0 that answers the n-th request with statuses[n] (200 after the
 * list; 0 holds the request unanswered) and notes each arrival on `clock`. `base` is the address
 * to submit as `webhook`; `until(n)` resolves once n requests have arrived. Closed with the test.
 */
export async function startWebhookReceiver(statuses: readonly number[] = [], clock: Clock = systemClock) {
  const received: ReceivedWebhook[] = [];
  const waiters: (() => void)[] = [];
  const server = await startLoopbackServer((req, res, body) => {
    received.push({ url: req.url ?? '', headers: req.headers, body: body.toString('utf8'), at: clock.now() });
    const status = statuses[received.length - 1] ?? 200;
    if (status !== 0) res.writeHead(status).end();
    waiters.splice(0).forEach((wake) => wake());
  });
  onTestFinished(server.close);
  const base = `${server.origin}/hooks/pixelmill`;
  const until = async (count: number): Promise<ReceivedWebhook[]> => {
    while (received.length < count) await new Promise<void>((resolve) => waiters.push(resolve));
    return received;
  };
  return { base, received, until };
}
