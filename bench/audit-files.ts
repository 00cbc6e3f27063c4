// Where an audit reads a finished run's files: its output folder, or its bucket through the S3
// API with the server's own client (not pixelmill's store code, so the audit stays independent of
// what it checks). Paths are relative to the output: `report.jsonl`, `images/...`.
import { join } from 'node:path';
import { readFile } from 'node:fs/promises';
import { GetObjectCommand, ListObjectsV2Command, NoSuchKey, type S3Client } from '@aws-sdk/client-s3';
import { readSubmitJournals, STATE_DIR_NAME, stateDirOf, type JournalLine } from '../runstate/index.js';
import { parseJsonLines } from '../runstate/index.js';

export interface AuditFiles {
  /** The file's bytes, or undefined when it is not there. */
  read(path: string): Promise<Buffer | undefined>;
  /** Every line of the run's submit journal. */
  journal(): Promise<Partial<JournalLine>[]>;
}

export function folderFiles(outputDir: string): AuditFiles {
  return {
    read: (path) =>
      readFile(join(outputDir, path)).catch((error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return undefined;
        throw error;
      }),
    journal: async () => readSubmitJournals(stateDirOf(outputDir)),
  };
}

/** The run's objects under `s3://<bucket>/<prefix>/`; the journal is one object per line there. */
export function bucketFiles(client: S3Client, bucket: string, prefix: string): AuditFiles {
  const read = async (path: string): Promise<Buffer | undefined> => {
    try {
      const answer = await client.send(new GetObjectCommand({ Bucket: bucket, Key: `${prefix}/${path}` }));
      return Buffer.from(await answer.Body!.transformToByteArray());
    } catch (error) {
      if (error instanceof NoSuchKey) return undefined;
      throw error;
    }
  };
  const list = async (under: string): Promise<string[]> => {
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const page = await client.send(
        new ListObjectsV2Command({ Bucket: bucket, Prefix: `${prefix}/${under}`, ContinuationToken: token }),
      );
      for (const object of page.Contents ?? []) keys.push(object.Key!.slice(prefix.length + 1));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return keys;
  };
  return {
    read,
    journal: async () => {
      const lines: Partial<JournalLine>[] = [];
      for (const path of await list(`${STATE_DIR_NAME}/submits/`)) {
        const text = (await read(path))?.toString('utf8') ?? '';
        lines.push(...(Array.from(parseJsonLines(text)) as Partial<JournalLine>[]));
      }
      return lines;
    },
  };
}
