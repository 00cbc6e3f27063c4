// Test helpers for the emulator: start one on 127.0.0.1 port 0 with config overrides and have it
// closed automatically, a manual clock to move emulated time without sleeping, and a raw HTTP
// helper that returns status, headers and parsed JSON.
//
// Cleanup: started inside a test, the emulator closes when that test finishes; started in a
// beforeAll (or at file level), it closes in this module's afterAll for the importing file.
import { afterAll, onTestFinished } from 'vitest';
import { request } from 'undici';
import type { Clock, Timer } from '../../emulator/clock.js';
import { startEmulator, type EmulatorConfigOverrides, type RunningEmulator } from '../../emulator/index.js';

const fileScoped: RunningEmulator[] = [];
afterAll(async () => {
  await Promise.all(fileScoped.splice(0).map((emulator) => emulator.close()));
});

export interface TestEmulatorOptions {
  clock?: Clock;
}

export async function startTestEmulator(
  config: EmulatorConfigOverrides = {},
  options: TestEmulatorOptions = {},
): Promise<RunningEmulator> {
  const emulator = await startEmulator({ config: { host: '127.0.0.1', port: 0, ...config }, ...options });
  try {
    onTestFinished(() => emulator.close());
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

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- tests inspect arbitrary envelopes
}

export interface RawRequest {
  method?: 'GET' | 'POST' | 'HEAD' | 'PUT' | 'DELETE';
  /** Sent as `Authorization: Bearer <key>`; omit for no header. */
  key?: string;
  /** An object is sent as JSON; a string is sent as is. */
  body?: unknown;
  headers?: Record<string, string>;
}

export async function call(baseUrl: string, path: string, options: RawRequest = {}): Promise<RawResponse> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
  let body: string | undefined;
  if (options.body !== undefined) {
    body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await request(`${baseUrl}${path}`, {
    method: options.method ?? (body === undefined ? 'GET' : 'POST'),
    headers,
    body,
  });
  const text = await response.body.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.statusCode, headers: response.headers, text, json };
}
