// An optional append-only journal (`state_file`) of what changes the simulated future: submits
// (with everything drawn for them), cancels, limit changes and the provider's own events. Each
// line is written before the change is acknowledged; a restarted emulator replays the lines in
// order and so re-derives every job's queue position and timing. A torn last line (a kill
// mid-write) is skipped.
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { JobRecord } from './job.js';

export type JournalEvent =
  | { kind: 'submit'; at: number; job: JobRecord }
  | { kind: 'cancel'; at: number; id: string }
  /** `account` null: the default limit of every account without its own. */
  | { kind: 'limit'; at: number; account: string | null; limit: number | null }
  /** Anything else the provider must replay (e.g. a rotated webhook key). */
  | { kind: 'custom'; at: number; name: string; payload: unknown };

export class EventJournal {
  constructor(private readonly file: string) {
    mkdirSync(dirname(file), { recursive: true });
  }

  append(event: JournalEvent): void {
    // Infinity is not JSON; a limit of "no limit" is written as null.
    appendFileSync(this.file, `${JSON.stringify(event)}\n`);
  }

  load(): JournalEvent[] {
    if (!existsSync(this.file)) return [];
    const content = readFileSync(this.file, 'utf8');
    // End a torn last line, or the next append would be glued to it and lost as well.
    if (content && !content.endsWith('\n')) appendFileSync(this.file, '\n');
    const events: JournalEvent[] = [];
    for (const line of content.split('\n')) {
      try {
        const event = JSON.parse(line) as JournalEvent;
        if (typeof event === 'object' && event !== null && typeof event.at === 'number') events.push(event);
      } catch {
        // empty or torn
      }
    }
    return events;
  }
}
