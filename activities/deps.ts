// What the activities get from the worker that builds them (STYLE habit 3): the API's address and
// key when the worker overrides the manifest, the environment the key is read from, a clock, and
// storage. Secrets come only from here, never from activity inputs (which land in history).
import { LocalResultStore } from '../storage/local.js';
import type { ResultStore } from '../storage/result-store.js';

export interface ActivityDeps {
  /** Overrides the manifest's `api.base_url` (e.g. the built-in emulator, PIXELMILL_API_BASE_URL). */
  apiBaseUrl?: string;
  /** Overrides the key read from the environment. Never logged. */
  apiKey?: string;
  /** Where `api_key_env` and PIXELMILL_API_KEY are looked up; default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Epoch milliseconds; default `Date.now`. */
  now?: () => number;
  /** Storage for a run's output directory; default a LocalResultStore rooted there. */
  resultStore?: (outputDir: string) => ResultStore;
}

export interface ResolvedDeps {
  apiBaseUrl?: string;
  apiKey?: string;
  env: NodeJS.ProcessEnv;
  now: () => number;
  resultStore: (outputDir: string) => ResultStore;
}

export function resolveDeps(deps: ActivityDeps): ResolvedDeps {
  const resolved: ResolvedDeps = {
    env: deps.env ?? process.env,
    now: deps.now ?? Date.now,
    resultStore: deps.resultStore ?? ((outputDir) => new LocalResultStore(outputDir)),
  };
  if (deps.apiBaseUrl !== undefined) resolved.apiBaseUrl = deps.apiBaseUrl;
  if (deps.apiKey !== undefined) resolved.apiKey = deps.apiKey;
  return resolved;
}
