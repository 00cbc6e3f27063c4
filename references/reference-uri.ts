// A local reference image, as a plan and its generation key name it: `pixelmill-ref:<sha256>.<ext>`,
// its content rather than its path on the CLI's machine. Workers turn it into a URL the provider
// can fetch (host.ts) from the copy the CLI put in the run's store (publish.ts), under
// `<state>/references/<sha256>.<ext>`.

export const REFERENCE_SCHEME = 'pixelmill-ref:';
/** The folder (or prefix) of a run's state that holds its references. */
export const REFERENCES_DIR = 'references';

export interface ReferenceName {
  sha256: string;
  ext: string;
  /** `<sha256>.<ext>`: its file (or object) name under REFERENCES_DIR. */
  file: string;
}

const REFERENCE_URI = /^pixelmill-ref:([0-9a-f]{64})\.([a-z]{3,4})$/;

export function referenceUri(sha256: string, ext: string): string {
  return `${REFERENCE_SCHEME}${sha256}.${ext}`;
}

/** The reference `entry` names, or undefined when it is a URL. */
export function parseReferenceUri(entry: string): ReferenceName | undefined {
  const match = REFERENCE_URI.exec(entry);
  if (!match) return undefined;
  const [, sha256 = '', ext = ''] = match;
  return { sha256, ext, file: `${sha256}.${ext}` };
}
