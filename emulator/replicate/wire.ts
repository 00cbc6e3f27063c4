// Replicate's HTTP API as it appears on the wire, stated here on its own (never imported from the
// client): the prediction object, its statuses, the list page, and the error bodies.
//
// Sources (read 2026-11-26): the HTTP API's OpenAPI description (predictions.create/get/list/
// cancel, models.predictions.create, webhooks.default.secret.get), docs/topics/predictions/
// lifecycle, recorded responses in replicate/replicate-python's test cassettes, and the error
// bodies quoted in replicate/replicate-python issue #47 and client code. docs/emulators/replicate.md
// lists them with what each one settles.

export const STATUSES = ['starting', 'processing', 'succeeded', 'failed', 'canceled', 'aborted'] as const;
export type PredictionStatus = (typeof STATUSES)[number];

export const TERMINAL_STATUSES: ReadonlySet<PredictionStatus> = new Set([
  'succeeded',
  'failed',
  'canceled',
  'aborted',
]);

export const WEBHOOK_EVENTS = ['start', 'output', 'logs', 'completed'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** The prediction object: GET /v1/predictions/{id}, create and cancel answers, webhook bodies. */
export interface PredictionJson {
  id: string;
  model: string;
  /** A 64-hex version id, or "hidden" for an official model run through its model endpoint. */
  version: string;
  input: Record<string, unknown>;
  /** Absent from list entries (the list example in the API reference has none). */
  logs?: string | null;
  /** One URL, a list of URLs, or null (not yet, failed, or removed after retention). */
  output?: string[] | string | null;
  data_removed: boolean;
  error: string | null;
  status: PredictionStatus;
  source: 'api';
  created_at: string;
  started_at?: string | null;
  completed_at?: string | null;
  /** ISO time at which the prediction is canceled (aborted before start); with Cancel-After only. */
  deadline?: string;
  urls: { get: string; cancel: string; web: string };
  /** predict_time and total_time, in seconds, once the prediction is terminal. */
  metrics?: { predict_time?: number; total_time?: number };
}

export interface PredictionPage {
  next: string | null;
  previous: string | null;
  results: PredictionJson[];
}

/** One entry of a 422's `invalid_fields` (the changelog of 2024-05-01 shows the shape). */
export interface InvalidField {
  type: string;
  /** `input.aspect_ratio`; empty for a top-level property of the request body. */
  field: string;
  description: string;
}

/**
 * Every error body: RFC 7807 problem details as the clients read them (type, title, status,
 * detail, instance); the 429 of the rate-limit page has a `detail` only.
 */
export interface ProblemJson {
  title?: string;
  detail: string;
  status?: number;
  invalid_fields?: InvalidField[];
  retry_after?: number;
}

/** An error to answer: status, body and extra headers. Thrown by handlers, sent by the server. */
export class ReplicateApiError extends Error {
  override name = 'ReplicateApiError';

  constructor(
    readonly status: number,
    readonly body: ProblemJson,
    readonly headers: Record<string, string> = {},
  ) {
    super(body.detail);
  }
}

export const unauthenticated = (tokenGiven: boolean): ReplicateApiError =>
  new ReplicateApiError(401, {
    title: 'Unauthenticated',
    detail: tokenGiven
      ? 'You did not pass a valid authentication token'
      : 'You did not pass an authentication token',
    status: 401,
  });

export const notFound = (): ReplicateApiError =>
  new ReplicateApiError(404, { detail: 'The requested resource could not be found.', status: 404 });

export const invalidVersion = (): ReplicateApiError =>
  new ReplicateApiError(422, {
    title: 'Invalid version or not permitted',
    detail: "The specified version does not exist (or perhaps you don't have permission to use it?)",
    status: 422,
  });

/** A 422 listing every invalid field; `detail` repeats them one a line, as the API's does. */
export const inputValidationFailed = (fields: InvalidField[]): ReplicateApiError =>
  new ReplicateApiError(422, {
    title: 'Input validation failed',
    detail: fields.map((f) => `- ${f.field === '' ? '(root)' : f.field}: ${f.description}\n`).join(''),
    status: 422,
    invalid_fields: fields,
  });

export const insufficientCredit = (): ReplicateApiError =>
  new ReplicateApiError(402, {
    title: 'Insufficient credit',
    detail:
      'You have insufficient credit to run this model. Go to https://replicate.com/account/billing#billing to purchase credit. Once you purchase credit, please wait a few minutes before trying again.',
    status: 402,
  });

export const methodNotAllowed = (method: string, allow: string): ReplicateApiError =>
  new ReplicateApiError(405, { detail: `Method "${method}" not allowed.`, status: 405 }, { allow });

export const badRequest = (detail: string): ReplicateApiError =>
  new ReplicateApiError(400, { detail, status: 400 });

/** The 5xx an injected server fault answers. */
export const serverError = (status: 500 | 502 | 503): ReplicateApiError =>
  new ReplicateApiError(status, {
    detail: status === 500 ? 'Internal server error' : status === 502 ? 'Bad gateway' : 'Service unavailable',
    status,
  });

/** ISO 8601 with milliseconds and Z, as the API writes created_at (e.g. 2024-10-04T18:07:40.328Z). */
export const isoTime = (ms: number): string => new Date(ms).toISOString();
