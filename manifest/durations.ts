// Durations in a manifest, as people write them: `90s`, `30m`, `2h`, `1h30m` (also `ms` and `d`).

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION = /^(\d+(?:\.\d+)?(?:ms|s|m|h|d))+$/;
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/g;

/** Milliseconds, or undefined when `text` is not a duration. */
export function parseDuration(text: string): number | undefined {
  const compact = text.replace(/\s+/g, '');
  if (!DURATION.test(compact)) return undefined;
  let ms = 0;
  for (const [, amount, unit] of compact.matchAll(PART)) ms += Number(amount) * (UNIT_MS[unit!] ?? 0);
  return Math.round(ms);
}

/** `90 s`, `30 min`, `2 h 5 min`: for messages. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  const seconds = Math.round(ms / 1000);
  if (seconds < 120) return `${seconds} s`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 120) return `${minutes} min`;
  return `${Math.floor(minutes / 60)} h${minutes % 60 ? ` ${minutes % 60} min` : ''}`;
}

/** `limits.deadline`: a duration from the run's start, or a moment (ISO 8601 with a time zone). */
export type Deadline = { afterMs: number } | { atMs: number };

const ISO_MOMENT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;

export function parseDeadline(text: string): Deadline | undefined {
  const afterMs = parseDuration(text);
  if (afterMs !== undefined) return { afterMs };
  if (!ISO_MOMENT.test(text.trim())) return undefined;
  const atMs = Date.parse(text.trim());
  return Number.isNaN(atMs) ? undefined : { atMs };
}
