// The provider interface: what pixelmill needs of an asynchronous image API, in pixelmill's own
// words (tasks, their states and results), so that workflows drive capabilities and never a
// provider's name. Each provider is a folder beside this file (apimart/, fal/, replicate/, bfl/)
// that maps these calls onto its wire format; registry.ts names them.
//
// A provider has two halves:
// - pure knowledge (`ImageProvider`): its capabilities, how a planned item becomes its request
//   (also what `validate` reports when the mapping cannot express a field), how its webhooks are
//   read and verified;
// - a client (`ProviderClient`) per base URL and key, which makes the HTTP calls. It never retries:
//   Temporal owns retries, and errors come classified (api/errors.ts) for the activities to map.
import type { Dispatcher } from 'undici';
import type { DownloadedResult } from '../api/download.js';
import type { EndpointStats } from '../api/http-client.js';
import type { TaskResult } from '../common/types.js';

export type { DownloadedResult, EndpointStats, TaskResult };

/** The providers pixelmill drives; `apimart` is the asynchronous task API of the first spec. */
export const PROVIDER_NAMES = ['apimart', 'fal', 'replicate', 'bfl', 'openai'] as const;
export type ProviderName = (typeof PROVIDER_NAMES)[number];
export const DEFAULT_PROVIDER: ProviderName = 'apimart';

/**
 * How a client learns whether tasks have finished, at the fewest calls the provider allows:
 * - `batch`: one call answers the states of up to `maxIds` tasks (never their results);
 * - `list`: a sweep of the account's tasks created after a moment, newest first, `pageSize` a
 *   call, each entry with its state (and its result when `resultInLookup`); tasks older than
 *   what a sweep reaches cheaply are asked one at a time;
 * - `single`: one request per task, timed by the task's age.
 */
export type LookupStyle =
  { kind: 'batch'; maxIds: number } | { kind: 'list'; pageSize: number } | { kind: 'single' };

/** What limits an account: calls per second (a rate), tasks running at once (a concurrency), or both. */
export interface ProviderLimits {
  rate: boolean;
  concurrency: boolean;
  /** The documented concurrency when the provider publishes one (a starting point, not a promise). */
  documentedConcurrency?: number;
  /**
   * What a submit over the concurrency gets: `refused` (a 429: BFL), which lets the shard try a
   * task's slot as soon as the task has probably finished; or `queued` (fal), where only the queue's
   * length tells, so a slot counts until its task is known finished.
   */
  overConcurrency?: 'refused' | 'queued';
}

/**
 * How work reaches a provider:
 * - `tasks`: one asynchronous task per item, its state learned by lookups (the shard workflow);
 * - `batch-file`: a file of requests per batch, polled as one and answered by an output file
 *   (OpenAI's Batch API: the batch shard workflow);
 * - `held-call`: one synchronous call per item that holds the connection until the images come
 *   back in its answer (OpenAI's Images API).
 */
export const SUBMISSIONS = ['tasks', 'batch-file', 'held-call'] as const;
export type Submission = (typeof SUBMISSIONS)[number];

/** The manifest's `api.mode`: which of its submissions a provider offering several uses. */
export type ApiMode = 'batch' | 'sync';

export interface ProviderCapabilities {
  /**
   * How work reaches the provider, by `api.mode` for a provider that offers several; absent: tasks
   * only (and `api.mode` is a validate error).
   */
  submission?: Readonly<Record<ApiMode, Submission>>;
  lookup: LookupStyle;
  /**
   * A lookup's answer for a finished task carries its result (images, cost, error), so no
   * further call is needed to collect it. False: collecting costs a call of its own.
   */
  resultInLookup: boolean;
  /**
   * Each task's status can be followed as a stream that tells the moment it finishes (fal's
   * `{status_url}/stream`): without webhooks, the workers follow it and signal the shard as a
   * webhook would, and timed lookups only catch what a stream missed.
   */
  statusStream?: boolean;
  webhooks: false | { resultInPayload: 'always' | 'sometimes' | 'never' };
  limits: ProviderLimits;
  /**
   * How long a finished task's result can still be fetched, ms after it finished: what the
   * collect lane must beat. The result's own `expiresAt`, when told, wins over this.
   */
  resultRetentionMs: number;
  cancel: boolean;
  /** Submits carry an idempotency key the provider honours (a retried submit creates no second task). */
  idempotencyKeys: boolean;
  /** The provider reports each task's cost (`TaskResult.creditsCost`); otherwise `pricing` estimates it. */
  reportsCost: boolean;
  /** Submits carry a deadline to start (fal's X-Fal-Request-Timeout, Replicate's Cancel-After). */
  startDeadline: boolean;
  /** Up to how many images one task can make (`n`). */
  maxImagesPerTask: number;
}

/** A planned item as the provider mapping sees it: pixelmill's fields, then the provider's own `params`. */
export interface ItemRequest {
  prompt: string;
  model: string;
  /** Aspect ratio, `W:H` or `auto`. */
  size: string;
  /** `1K`, `2K` or `4K`. */
  resolution: string;
  n: number;
  /** Reference images as the provider will fetch them (URLs, after hosting). */
  image_urls?: string[];
  language?: string;
  /** The provider's own input fields, passed through after the mapping. */
  params?: Record<string, unknown>;
}

/** A field of an item that the provider's mapping cannot express: `path` is relative to the item. */
export interface MappingProblem {
  path: (string | number)[];
  message: string;
}

/** The provider's request for an item: where it goes (a model path) and its JSON body. */
export interface ProviderRequest {
  model: string;
  body: Record<string, unknown>;
}

export interface SubmitOptions {
  /** Sent as the provider's idempotency header where it has one. */
  idempotencyKey?: string;
  /** The shard's webhook address (the receiver's URL for this shard); absent: no webhook. */
  webhook?: string;
  /** The secret a provider signs its webhooks with when the caller chooses it (BFL's `webhook_secret`). */
  webhookSecret?: string;
  /** Give up a task that has not started within this long (fal's X-Fal-Request-Timeout, Replicate's Cancel-After). */
  startWithinMs?: number;
  signal?: AbortSignal;
}

export interface SubmittedTask {
  /**
   * pixelmill's reference to the task: the provider's id, then `|` and what the client needs to
   * reach it again when the id alone does not say (fal's request path, BFL's polling URL).
   * `taskIdOf(ref)` (common/task-ref.ts) gives the id the report, the webhooks and the
   * provider's console show.
   */
  ref: string;
  /** The cost the provider announced at submit (BFL's `cost`), when it does. */
  creditsCost?: number;
  /** The provider's queue at submit: the account's tasks waiting ahead of this one (fal). */
  queuePosition?: number;
}

/** A lookup's word about one task: its state, and its result when the answer carried it. */
export interface TaskState {
  /**
   * `pending`, `processing`, `completed`, `failed`, or a lookup outcome (`expired`, `not_found`,
   * `invalid_id`); any other value is "not finished yet" for the workflow.
   */
  status: string;
  /** A finished task's result, when the answer carried it (`resultInLookup`). */
  result?: TaskResult;
  /** The provider's queue: how many of the account's tasks are ahead of this one (fal). */
  queuePosition?: number;
}

export interface ProviderClientOptions {
  baseUrl: string;
  apiKey: string;
  dispatcher?: Dispatcher;
  userAgent?: string;
  now?: () => number;
}

/**
 * One account's connection to a provider. Each method is one HTTP call (the activities pace and
 * count calls, and loop over tasks and pages themselves); every call throws the classified errors
 * of api/errors.ts, and none retries.
 */
export interface ProviderClient {
  readonly provider: ProviderName;
  submit(request: ProviderRequest, options?: SubmitOptions): Promise<SubmittedTask>;
  /** `batch` lookups: the states of up to `maxIds` tasks in one call, in the order asked. */
  lookupBatch?(refs: readonly string[], options?: CallOptions): Promise<TaskState[]>;
  /** One task's state (`single` lookups, and the stragglers of a `list` sweep). */
  lookupOne(ref: string, options?: CallOptions): Promise<TaskState>;
  /**
   * `statusStream` providers: follows the task's status until it has finished and resolves with
   * that state (`completed` or `failed`, without the result: getTask reads it), or `expired`;
   * `onState` hears each state the stream tells, the first at once.
   */
  followStatus?(
    ref: string,
    options?: CallOptions & { onState?: (state: TaskState) => void },
  ): Promise<TaskState>;
  /** `list` lookups: one page of the account's tasks created at or after `sinceMs`, newest first. */
  listTasks?(page: ListPage, options?: CallOptions): Promise<ListedTasks>;
  /**
   * A finished task's result: the collect lane's call. A task still running answers its state
   * without a result; one the provider no longer knows, `expired` or `not_found`.
   */
  getTask(ref: string, options?: CallOptions): Promise<TaskResult>;
  /** Asks the provider to stop a task; resolves whether or not it had already finished. */
  cancel(ref: string, options?: CallOptions): Promise<void>;
  /** Streams a result image (no credentials: the result host may be another origin). */
  download(url: string, options?: CallOptions): Promise<DownloadedResult>;
  stats(): Record<string, EndpointStats>;
  close(): Promise<void>;
}

export interface CallOptions {
  signal?: AbortSignal;
}

/** Where a page of a list sweep starts: the first page by creation time, the next by the cursor it gave. */
export type ListPage = { sinceMs: number; cursor?: undefined } | { cursor: string; sinceMs?: undefined };

export interface ListedTasks {
  /** The tasks of the page, newest first, each with its id and creation time. */
  tasks: (TaskState & { id: string; createdMs: number })[];
  /** The next (older) page, when there is one. */
  next?: string;
}

/** A webhook as the receiver got it: the raw body and its headers, lower-case names. */
export interface IncomingWebhook {
  body: Buffer;
  headers: Record<string, string | undefined>;
  /** The receiver's clock (ms), for timestamp tolerance. */
  nowMs: number;
}

/** What a verified webhook says: the task's id (not its ref) and what finished, if it did. */
export interface WebhookNotice {
  taskId: string;
  /** As `TaskState.status`; a non-terminal status (Replicate's `start`) changes nothing. */
  status: string;
  /** The result, when the payload carried it; otherwise the collect lane fetches it. */
  result?: TaskResult;
}

/** Why a webhook was refused: one line for the receiver's log (never a secret). */
export type WebhookVerdict =
  { ok: true; notice: WebhookNotice } | { ok: false; status: 400 | 401; reason: string };

/** What a webhook verifier needs that only the deployment knows: secrets, key URLs, the API key. */
export interface WebhookKeys {
  /** The shared secret (apimart's account webhook_secret, BFL's webhook_secret, Replicate's `whsec_`). */
  secret?: string;
  /** Where the provider publishes its signing keys (fal's JWKS). */
  jwksUrl?: string;
  /** Fetches the secret from the provider with the API key (Replicate) when none is configured. */
  fetchSecret?: () => Promise<string>;
}

export interface WebhookVerifier {
  verify(webhook: IncomingWebhook): Promise<WebhookVerdict>;
}

export interface ImageProvider {
  readonly name: ProviderName;
  /** What the README and `plan` call it. */
  readonly title: string;
  readonly capabilities: ProviderCapabilities;
  /** The model an item without one uses. */
  readonly defaultModel: string;
  /**
   * The item as this provider's request, or every field the mapping cannot express (with its
   * path within the item), for `validate` to report at file:line:col.
   */
  mapRequest(item: ItemRequest): { request: ProviderRequest } | { problems: MappingProblem[] };
  /**
   * What an image costs by resolution when the manifest has no `pricing`, in the provider's own
   * unit (OpenAI: US dollars, by mode); absent: pixelmill's 1, 2 and 4 credits.
   */
  defaultCreditsPerImage?(mode: ApiMode | undefined): Record<string, number>;
  /**
   * What one image of `item` is expected to cost in `mode`, in the provider's unit, for a provider
   * whose price depends on more than the resolution (OpenAI: model, size, quality, Batch or sync):
   * from the manifest's `pricing` (`perResolution`, when it has one) or the documented prices.
   * Absent: `creditsPerImage` by resolution. `plan`, the budget and the shards' allowances use it.
   */
  imageCredits?(
    item: ItemRequest,
    mode: ApiMode | undefined,
    perResolution?: Readonly<Record<string, number>>,
  ): number;
  /**
   * What the items cost in each of its modes (a provider that has several): `plan` shows them side
   * by side, in the provider's unit, priced as imageCredits prices them.
   */
  pricesByMode?(
    items: readonly ItemRequest[],
    perResolution?: Readonly<Record<string, number>>,
  ): Record<ApiMode, number>;
  createClient(options: ProviderClientOptions): ProviderClient;
  /**
   * What a webhook verifier needs from the account itself (Replicate's secret, fetched with the
   * API key); absent when the deployment's keys are enough.
   */
  webhookKeysFor?(api: ProviderClientOptions): WebhookKeys;
  /**
   * What a webhook verifier reads from the deployment's environment (fal's JWKS address); absent
   * when it reads nothing there. The receiver's own keys win over these.
   */
  webhookKeysFromEnv?(env: NodeJS.ProcessEnv): WebhookKeys;
  /** A verifier for this provider's webhooks; undefined when it sends none. */
  webhookVerifier?(keys: WebhookKeys): WebhookVerifier;
}
