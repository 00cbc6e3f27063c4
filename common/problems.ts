// How a problem in a file a person wrote names its place, in a manifest and an emulator config
// alike: `file:line:col path: message`, the path as `items[3].prompt`.

/** `items[3].prompt`, `limits.requests_per_second`; `root` for the empty path. */
export function formatPath(path: readonly PropertyKey[], root: string): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += out ? `.${String(segment)}` : String(segment);
  }
  return out || root;
}
