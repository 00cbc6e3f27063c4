// Where the provider fetches a run's local reference images (reference-uri.ts), decided by the
// worker at each submit, so that no URL, signature or credential is ever in a workflow's history:
// - an s3:// output: a presigned GET of the object the CLI uploaded. Its signing time is the
//   start of the current hour and it lives 3 hours, so a retried submit within the hour sends
//   the same body (its Idempotency-Key still matches) and the URL lives 2 hours past any submit;
// - a local output: `output.public_url` or PIXELMILL_PUBLIC_URL, where the user serves the
//   output's `.pixelmill/references/` folder; else the embedded run's reference server;
// - otherwise the submit fails its item, saying how to host them.
import { ApplicationFailure } from '@temporalio/activity';
import { FailureType } from '../common/failure-types.js';
import { STATE_DIR_NAME, stateDirOf } from '../runstate/plan.js';
import type { PlanMeta } from '../runstate/index.js';
import { S3Objects } from '../storage/s3-objects.js';
import type { S3Location } from '../storage/s3-location.js';
import { parseReferenceUri, REFERENCES_DIR } from './reference-uri.js';
import type { ReferenceServer } from './server.js';

export const PUBLIC_URL_ENV = 'PIXELMILL_PUBLIC_URL';
const SIGNING_WINDOW_MS = 60 * 60_000;
const PRESIGNED_LIFETIME_S = 3 * 60 * 60;

export interface ReferenceHostOptions {
  env: NodeJS.ProcessEnv;
  /** The embedded run's reference server, when there is one. */
  server?: ReferenceServer;
  now: () => number;
}

export const unhostedMessage =
  'this item has local reference images and its output is a local folder the provider cannot reach: use an s3:// output, set output.public_url (or PIXELMILL_PUBLIC_URL) to where its .pixelmill/references/ folder is served, or run it embedded';

export class ReferenceHost {
  readonly #objects = new Map<string, S3Objects>();

  constructor(private readonly options: ReferenceHostOptions) {}

  /** `entries` (an item's image_urls) with each reference as a URL the provider can fetch. */
  async urls(meta: Pick<PlanMeta, 'outputDir' | 'objectStore' | 'publicUrl'>, entries: readonly string[]) {
    const urls: string[] = [];
    for (const entry of entries) {
      const reference = parseReferenceUri(entry);
      urls.push(reference ? await this.#urlOf(meta, reference.file) : entry);
    }
    return urls;
  }

  async #urlOf(meta: Pick<PlanMeta, 'outputDir' | 'objectStore' | 'publicUrl'>, file: string) {
    if (meta.objectStore) {
      const signingDate = new Date(Math.floor(this.options.now() / SIGNING_WINDOW_MS) * SIGNING_WINDOW_MS);
      return this.#objectsOf(meta.objectStore).presignedGetUrl(file, {
        expiresInS: PRESIGNED_LIFETIME_S,
        signingDate,
      });
    }
    const base = meta.publicUrl ?? this.options.env[PUBLIC_URL_ENV];
    if (base) return `${base.replace(/\/+$/, '')}/${file}`;
    if (this.options.server) return this.options.server.urlFor(stateDirOf(meta.outputDir), file);
    throw ApplicationFailure.create({
      type: FailureType.ReferencesUnhosted,
      message: unhostedMessage,
      nonRetryable: true,
    });
  }

  #objectsOf(output: S3Location): S3Objects {
    const location = {
      ...output,
      prefix: [output.prefix, STATE_DIR_NAME, REFERENCES_DIR].filter(Boolean).join('/'),
    };
    const key = JSON.stringify(location);
    let objects = this.#objects.get(key);
    if (!objects) {
      objects = new S3Objects({ env: this.options.env, location });
      this.#objects.set(key, objects);
    }
    return objects;
  }

  close(): void {
    for (const objects of this.#objects.values()) objects.close();
  }
}
