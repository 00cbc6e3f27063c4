// The two request headers of a create that change what the emulator does: `Prefer: wait[=n]`
// (sync mode) and `Cancel-After: <duration>` (a deadline). Both formats are the OpenAPI
// description's: `^wait(=([1-9]|[1-9][0-9]|60))?$`, and a duration of optional h, m and s parts,
// seconds when unitless, at least 5 seconds.

/** The longest sync wait the API grants, in seconds (also the default of a bare `wait`). */
export const MAX_WAIT_SECONDS = 60;
/** The shortest deadline Cancel-After accepts, in seconds. */
export const MIN_CANCEL_AFTER_SECONDS = 5;

export interface WaitPreference {
  seconds: number;
  /** What the answer's Preference-Applied header says: the token as it was honoured. */
  applied: string;
}

/**
 * The `wait` preference of a Prefer header, or undefined when there is none. Prefer is a list of
 * preferences (RFC 7240); one the server does not understand is ignored, so a malformed `wait`
 * (`wait=0`, `wait=abc`) counts as absent, and one above 60 is held to 60 (unconfirmed: the API
 * may refuse it instead; docs/emulators/replicate.md).
 */
export function parsePrefer(header: string | string[] | undefined): WaitPreference | undefined {
  if (header === undefined) return undefined;
  const tokens = (Array.isArray(header) ? header.join(',') : header).split(/[,;]/);
  for (const raw of tokens) {
    const token = raw.trim().toLowerCase();
    if (token === 'wait') return { seconds: MAX_WAIT_SECONDS, applied: 'wait' };
    const match = /^wait\s*=\s*"?(\d{1,6})"?$/.exec(token);
    if (!match) continue;
    const seconds = Number(match[1]);
    if (seconds < 1) continue;
    const held = Math.min(seconds, MAX_WAIT_SECONDS);
    return { seconds: held, applied: `wait=${held}` };
  }
  return undefined;
}

export type CancelAfter = { ok: true; seconds: number } | { ok: false; reason: string };

/** Seconds of a Cancel-After value: `30`, `90s`, `5m`, `1h30m45s`; at least 5 seconds. */
export function parseCancelAfter(value: string): CancelAfter {
  const text = value.trim();
  const match = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s?)?$/i.exec(text);
  if (text === '' || !match || (match[1] ?? match[2] ?? match[3]) === undefined) {
    return { ok: false, reason: `"${text}" is not a duration such as 30s, 5m or 1h30m` };
  }
  const seconds = Number(match[1] ?? 0) * 3600 + Number(match[2] ?? 0) * 60 + Number(match[3] ?? 0);
  if (seconds < MIN_CANCEL_AFTER_SECONDS) {
    return { ok: false, reason: `the minimum allowed duration is ${MIN_CANCEL_AFTER_SECONDS} seconds` };
  }
  return { ok: true, seconds };
}
