// An optional append-only journal of acknowledged tasks (`state_file`), so that an emulator that
// is killed and started again still knows every task it acknowledged. A task's whole future is
// fixed at submit, so one line per submit is enough to rebuild it; the line is written before the
// acknowledgement is sent. A torn last line (a kill mid-write) is skipped.
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { AccountState } from './auth.js';
import { TaskRecord } from './store.js';

type JournalLine = [
  id: string,
  account: string,
  prompt: string,
  n: number,
  size: string,
  resolution: TaskRecord['resolution'],
  language: TaskRecord['language'] | null,
  webhook: string | null,
  submittedAt: number,
  startsAt: number,
  endsAt: number,
  expiresAt: number,
  estimatedSeconds: number,
  failure: TaskRecord['failure'] | null,
  reserved: number,
  /** Absent in journals written before stuck tasks existed; 0 or 1 when an idempotency key follows. */
  stuck?: 0 | 1,
  idempotencyKey?: string | null,
  idempotencyFingerprint?: string | null,
  /** Its first reference's thumbnail: width, height, RGB pixels in base64, the image's sha256. */
  reference?: [number, number, string, string],
];

export class TaskJournal {
  constructor(private readonly file: string) {
    mkdirSync(dirname(file), { recursive: true });
  }

  append(record: TaskRecord): void {
    const line: JournalLine = [
      record.id,
      record.account.id,
      record.prompt,
      record.n,
      record.size,
      record.resolution,
      record.language ?? null,
      record.webhook ?? null,
      record.submittedAt,
      record.startsAt,
      record.endsAt,
      record.expiresAt,
      record.estimatedSeconds,
      record.failure ?? null,
      record.reserved,
    ];
    const { idempotency, reference } = record;
    if (reference) {
      line.push(record.stuck ? 1 : 0, idempotency?.key ?? null, idempotency?.fingerprint ?? null, [
        reference.width,
        reference.height,
        reference.rgb.toString('base64'),
        reference.sha256,
      ]);
    } else if (idempotency) line.push(record.stuck ? 1 : 0, idempotency.key, idempotency.fingerprint);
    else if (record.stuck) line.push(1);
    appendFileSync(this.file, `${JSON.stringify(line)}\n`);
  }

  /** The journal's tasks, for accounts that still exist in the config. */
  load(accounts: ReadonlyMap<string, AccountState>): TaskRecord[] {
    if (!existsSync(this.file)) return [];
    const content = readFileSync(this.file, 'utf8');
    // End a torn last line, or the next append would be glued to it and lost as well.
    if (content && !content.endsWith('\n')) appendFileSync(this.file, '\n');
    const records: TaskRecord[] = [];
    for (const text of content.split('\n')) {
      let line: JournalLine;
      try {
        line = JSON.parse(text) as JournalLine;
      } catch {
        continue; // empty or torn
      }
      const account = accounts.get(line[1]);
      if (!Array.isArray(line) || ![15, 16, 18, 19].includes(line.length) || !account) continue;
      const [id, , prompt, n, size, resolution, language, webhook, ...rest] = line;
      const [
        submittedAt,
        startsAt,
        endsAt,
        expiresAt,
        estimatedSeconds,
        failure,
        reserved,
        stuck,
        key,
        fingerprint,
        reference,
      ] = rest;
      records.push(
        new TaskRecord(
          id,
          account,
          prompt,
          n,
          size,
          resolution,
          language ?? undefined,
          webhook ?? undefined,
          submittedAt,
          startsAt,
          endsAt,
          expiresAt,
          estimatedSeconds,
          failure ?? undefined,
          reserved,
          stuck === 1,
          typeof key === 'string' && typeof fingerprint === 'string' ? { key, fingerprint } : undefined,
          reference && {
            width: reference[0],
            height: reference[1],
            rgb: Buffer.from(reference[2], 'base64'),
            sha256: reference[3],
          },
        ),
      );
    }
    return records;
  }
}
