// The progress display on its own: rate and ETA arithmetic from successive samples, the frame on
// a terminal (redrawn in place, coloured unless NO_COLOR) and plain lines on a pipe.
import { describe, expect, it } from 'vitest';
import { createProgressDisplay, type DisplayStream } from '../client/display/display.js';
import { formatDuration, renderFrame, renderLine, wrapParts } from '../client/display/frame.js';
import picocolors from 'picocolors';
import { RateTracker } from '../client/display/rates.js';
import type { LiveProgress } from '../client/progress.js';
import type { ItemCounts, RunState } from '../common/types.js';
import { describeOutcome, zeroCounts } from '../common/item-counts.js';

// Control sequences are built from ESC so that no raw escape byte sits in this file.
const ESC = String.fromCharCode(27);
const SGR_COLOUR = new RegExp(`${ESC}\\[(3\\d|9\\d|1|2)m`);
const ERASE_LINE = `${ESC}[2K`;
const CURSOR_UP = new RegExp(`${ESC}\\[\\d+A`);

class FakeStream implements DisplayStream {
  chunks: string[] = [];
  columns = 100;
  rows = 40;
  constructor(readonly isTTY: boolean) {}
  write(text: string): boolean {
    this.chunks.push(text);
    return true;
  }
  get text(): string {
    return this.chunks.join('');
  }
}

function counts(partial: Partial<ItemCounts>): ItemCounts {
  return { ...zeroCounts(), ...partial };
}

function progress(
  partial: Partial<ItemCounts>,
  totals: { calls?: number; images?: number; credits?: number; state?: RunState } = {},
): LiveProgress {
  const itemCounts = counts(partial);
  return {
    run: {
      runId: 'pixelmill/demo',
      name: 'demo',
      state: totals.state ?? 'running',
      emulated: true,
      itemCount: 100,
      shardCount: 1,
      finished: {
        counts: counts({}),
        creditsSpent: 0,
        apiCalls: { submit: 0, lookup: 0, get: 0 },
        images: 0,
      },
      runningShards: [],
      budgetCredits: 500,
      requestsPerSecond: 5,
    },
    counts: itemCounts,
    creditsSpent: totals.credits ?? 0,
    images: totals.images ?? 0,
    apiCalls: { submit: totals.calls ?? 0, lookup: 0, get: 0 },
  };
}

describe('rates from successive samples', () => {
  it('gives nothing until two samples are far enough apart, then the change per time', () => {
    const tracker = new RateTracker();
    tracker.add({ at: 0, apiCalls: 0, images: 0, finished: 0 });
    expect(tracker.rates(100)).toEqual({});
    tracker.add({ at: 1_000, apiCalls: 5, images: 2, finished: 3 });
    expect(tracker.rates(97)).toEqual({}); // 1 s apart: noise
    tracker.add({ at: 2_000, apiCalls: 10, images: 4, finished: 6 });
    const rates = tracker.rates(94);
    expect(rates.requestsPerSecond).toBeCloseTo(5);
    expect(rates.imagesPerMinute).toBeCloseTo(120); // 4 images in 2 s
    expect(rates.etaSeconds).toBeCloseTo(94 / 3); // 3 items/s
  });

  it('gives no ETA from fewer than 5 finished items: one early item says little', () => {
    const tracker = new RateTracker();
    tracker.add({ at: 0, apiCalls: 0, images: 0, finished: 0 });
    tracker.add({ at: 10_000, apiCalls: 50, images: 2, finished: 1 });
    expect(tracker.rates(239).etaSeconds).toBeUndefined();
    expect(tracker.rates(239).imagesPerMinute).toBeCloseTo(12);
  });

  it('measures requests over the last 30 s: a burst of counts does not read as a broken limit', () => {
    const tracker = new RateTracker();
    for (let second = 0; second <= 30; second++) {
      tracker.add({ at: second * 1000, apiCalls: second * 2, images: 0, finished: 0 });
    }
    expect(tracker.rates(10).requestsPerSecond).toBeCloseTo(2);
    expect(tracker.rates(10).requestsWindowS).toBe(30);
    // A retried lookup's 4 calls counted at once: over 5 s it would read 2.8/s.
    tracker.add({ at: 31_000, apiCalls: 66, images: 0, finished: 0 });
    expect(tracker.rates(10).requestsPerSecond).toBeCloseTo(2.13, 2);
    // A new pace shows within the window.
    for (let second = 32; second <= 61; second++) {
      tracker.add({ at: second * 1000, apiCalls: 66 + (second - 31) * 5, images: 0, finished: 0 });
    }
    expect(tracker.rates(10).requestsPerSecond).toBeCloseTo(5);
    // Nothing finishing: no ETA rather than an infinite one.
    expect(tracker.rates(10).etaSeconds).toBeUndefined();
  });

  it('measures images and the ETA over the last minute', () => {
    const tracker = new RateTracker();
    // 1 image/s for two minutes, then 3 images/s for one minute.
    for (let second = 0; second <= 180; second++) {
      const images = second <= 120 ? second : 120 + (second - 120) * 3;
      tracker.add({ at: second * 1000, apiCalls: 0, images, finished: Math.floor(images / 2) });
    }
    const rates = tracker.rates(300);
    expect(rates.imagesPerMinute).toBeCloseTo(180, 0);
    expect(rates.etaSeconds).toBeCloseTo(300 / 1.5, 0);
  });

  it('holds totals at their highest: a shard missing from one sample is not negative progress', () => {
    const tracker = new RateTracker();
    tracker.add({ at: 0, apiCalls: 100, images: 50, finished: 20 });
    tracker.add({ at: 2_000, apiCalls: 40, images: 10, finished: 5 }); // a shard dropped out
    tracker.add({ at: 4_000, apiCalls: 120, images: 60, finished: 28 });
    const rates = tracker.rates(72);
    expect(rates.requestsPerSecond).toBeCloseTo(5);
    expect(rates.imagesPerMinute).toBeCloseTo(150);
    expect(rates.etaSeconds).toBeCloseTo(36); // 8 items in 4 s
  });

  it('has an ETA of 0 when nothing remains', () => {
    const tracker = new RateTracker();
    tracker.add({ at: 0, apiCalls: 0, images: 0, finished: 0 });
    expect(tracker.rates(0).etaSeconds).toBe(0);
  });

  it('formats durations as m:ss and h:mm:ss', () => {
    expect(formatDuration(0)).toBe('0:00');
    expect(formatDuration(65.4)).toBe('1:05');
    expect(formatDuration(3723)).toBe('1:02:03');
  });
});

describe('the plain line', () => {
  it('names every state, the rates against the limit, the ETA and the credits against the budget', () => {
    const line = renderLine({
      progress: progress(
        { queued: 35, submitted: 5, processing: 20, storing: 5, completed: 30, failed: 5 },
        { credits: 61 },
      ),
      rates: { requestsPerSecond: 4.94, requestsWindowS: 30, imagesPerMinute: 212, etaSeconds: 95 },
    });
    expect(line).toBe(
      'pixelmill/demo (emulated): running · 35/100 final · queued 35 · submitted 5 · processing 20 · ' +
        'storing 5 · ' +
        'completed 30 · failed 5 · requests 4.9/s (30 s avg) of 5/s · images 212/min · ETA 1:35 · credits 61 of 500 budget',
    );
  });

  it('names the discovered rates in force and where they come from, the floor with since when', () => {
    const view = progress({ queued: 60, completed: 40 });
    view.run.rateCaps = {};
    view.rates = {
      mode: 'auto',
      submit: { perSecond: 48.4, source: 'discovered', since: '2026-11-23T08:00:00.000Z' },
      query: { perSecond: 0.2, source: 'floor', since: '2026-11-23T08:01:00.000Z' },
      workers: 2,
    };
    const line = renderLine({ progress: view, rates: { requestsPerSecond: 30, requestsWindowS: 30 } });
    expect(line).toContain(
      'requests 30.0/s (30 s avg) · rate submits 48/s (discovered), lookups 0.2/s (at the floor: the ' +
        'provider refuses nearly everything since 2026-11-23T08:01:00.000Z)',
    );
    expect(line).not.toContain('(30 s avg) of');
  });

  it('shows -- for what cannot be measured yet, and why a run is paused', () => {
    const paused = progress({ queued: 100 }, { state: 'paused' });
    paused.run.reason = 'the API answered 402: top up credits, then `pixelmill resume`';
    const line = renderLine({ progress: paused, rates: {} });
    expect(line).toContain('requests --/s of 5/s · images --/min · ETA paused');
    expect(line).toMatch(/\(the API answered 402: .*\)$/);
  });
});

describe('credits', () => {
  it('shows what the API holds for unfinished tasks beside what finished tasks were charged', () => {
    const view = {
      progress: { ...progress({ submitted: 30, completed: 12 }, { credits: 12 }), creditsReserved: 30 },
      rates: {},
    };
    expect(renderLine(view)).toContain('credits 12 + 30 reserved of 500 budget');
  });

  it('counts one item and one credit in the singular', () => {
    expect(describeOutcome({ ...zeroCounts(), completed: 1 }, 1, 1)).toBe('1 of 1 item completed; 1 credit');
    expect(describeOutcome({ ...zeroCounts(), completed: 1, failed: 1 }, 2, 0)).toBe(
      '1 of 2 items completed, 1 failed; 0 credits',
    );
  });
});

describe('a run before its plan exists', () => {
  it('says what it is doing instead of counting 0 of 0 items', () => {
    const preparing = progress({}, { state: 'preparing' });
    preparing.run.itemCount = 0;
    const line = renderLine({ progress: preparing, rates: {} });
    expect(line).toBe('pixelmill/demo (emulated): preparing · checking the manifest and writing the plan');
    const frame = renderFrame({ progress: preparing, rates: {} }, picocolors.createColors(false));
    expect(frame).not.toMatch(/0\/0|queued/);
    expect(frame).toContain('checking the manifest and writing the plan');
  });
});

describe('the frame at a narrow width', () => {
  it('breaks lines between counts, never inside one, and keeps every line within the width', () => {
    const view = {
      progress: progress(
        { queued: 12, submitted: 5, processing: 7, storing: 9, completed: 43, failed: 21, skipped: 3 },
        { credits: 61 },
      ),
      rates: { requestsPerSecond: 4.94, requestsWindowS: 30, imagesPerMinute: 212, etaSeconds: 95 },
    };
    const plain = picocolors.createColors(false);
    const lines = renderFrame(view, plain, 60).split('\n');
    for (const line of lines) expect(line.length, line).toBeLessThanOrEqual(60);
    const counts = lines.filter((line) => /queued|storing|failed|skipped/.test(line));
    expect(counts.join(' · ').split(' · ')).toEqual([
      'queued 12',
      'submitted 5',
      'processing 7',
      'storing 9',
      'completed 43',
      'failed 21',
      'skipped 3',
    ]);
    expect(counts.length).toBeGreaterThan(1);
  });

  it('wraps parts greedily, colour codes not counted', () => {
    const red = picocolors.createColors(true).red;
    expect(wrapParts([red('aaaa'), 'bbbb', 'cc'], ' · ', 11)).toEqual([`${red('aaaa')} · bbbb`, 'cc']);
    // A part wider than the line stays whole on its own line.
    expect(wrapParts(['abcdefghijkl', 'x'], ' · ', 5)).toEqual(['abcdefghijkl', 'x']);
  });
});

describe('the display on a terminal', () => {
  it('redraws a coloured frame in place', () => {
    const stream = new FakeStream(true);
    const display = createProgressDisplay({ stream, live: true, env: { TERM: 'xterm' }, startedAt: 0 });
    display.update(progress({ queued: 90, submitted: 10 }, { calls: 10 }), 1_000);
    const firstFrame = stream.text;
    expect(firstFrame).toContain('pixelmill/demo');
    expect(firstFrame).toContain('elapsed 0:01');
    expect(firstFrame).toMatch(SGR_COLOUR);
    display.update(progress({ queued: 70, submitted: 10, completed: 20 }, { calls: 40, images: 20 }), 4_000);
    const redraw = stream.text.slice(firstFrame.length);
    expect(redraw).toMatch(CURSOR_UP); // back to the top of the frame
    expect(redraw).toContain(ERASE_LINE);
    expect(redraw).toContain('20/100 items final');
    expect(redraw).toContain('requests 10.0/s (30 s avg) of 5/s');
    display.finish();
    // The last frame stays on screen: nothing is erased after it.
    expect(stream.text.slice(firstFrame.length + redraw.length)).not.toContain(ERASE_LINE);
  });

  it('honours NO_COLOR: still redrawn in place, but without colour codes', () => {
    const stream = new FakeStream(true);
    const display = createProgressDisplay({ stream, live: true, env: { TERM: 'xterm', NO_COLOR: '1' } });
    display.update(progress({ queued: 90, failed: 10 }), 1_000);
    display.update(progress({ queued: 80, failed: 20 }), 2_000);
    display.finish();
    expect(stream.text).toContain('failed 20');
    expect(stream.text).toContain(ERASE_LINE);
    expect(stream.text).not.toMatch(SGR_COLOUR);
  });

  it('prints plain lines with --no-progress, and on a dumb terminal', () => {
    for (const [live, env] of [
      [false, { TERM: 'xterm' }],
      [true, { TERM: 'dumb' }],
    ] as const) {
      const stream = new FakeStream(true);
      const display = createProgressDisplay({ stream, live, env });
      display.update(progress({ queued: 100 }), 0);
      display.finish();
      expect(stream.text).not.toContain(ESC);
      expect(stream.text).toMatch(/^pixelmill\/demo \(emulated\): running · 0\/100 final .*\n$/);
    }
  });
});

describe('the display on a pipe', () => {
  it('prints a line when counts change, at most every 5 s, and the last one at the end', () => {
    const stream = new FakeStream(false);
    const display = createProgressDisplay({ stream, live: true, env: { FORCE_COLOR: undefined } });
    display.update(progress({ queued: 100 }), 0);
    display.update(progress({ queued: 90, submitted: 10 }), 1_000); // changed, too soon
    display.update(progress({ queued: 90, submitted: 10 }), 5_000); // due
    display.update(progress({ queued: 90, submitted: 10 }), 10_000); // nothing new
    display.update(progress({ queued: 80, submitted: 10, completed: 10 }), 11_000); // too soon
    display.finish(); // ... but the last state is not lost
    const lines = stream.text.trimEnd().split('\n');
    expect(lines.map((line) => /queued (\d+)/.exec(line)?.[1])).toEqual(['100', '90', '80']);
    expect(stream.text).not.toContain(ESC);
  });

  it('prints a heartbeat line when nothing changes for a minute', () => {
    const stream = new FakeStream(false);
    const display = createProgressDisplay({ stream, live: false });
    for (let second = 0; second <= 130; second += 10)
      display.update(progress({ submitted: 100 }), second * 1000);
    expect(stream.chunks).toHaveLength(3); // at 0 s, 60 s and 120 s
  });
});
