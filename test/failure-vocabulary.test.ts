// Unit tests of the one failure vocabulary: every error class under the PixelmillError root with
// its own name, a stable code and a retry flag; the failure type registry naming every class that
// becomes a Temporal failure type; the shared problem path. No servers.
import { describe, expect, it } from 'vitest';
import { BodyTooLarge } from '../api/http.js';
import * as api from '../api/index.js';
import { errorSummary, PixelmillError, UserError } from '../common/errors.js';
import {
  ActivityFailureType,
  ApiFailureType,
  FailureType,
  ItemFailureType,
  StorageFailureType,
} from '../common/failure-types.js';
import { formatPath } from '../common/problems.js';
import { EmulatorApiError } from '../emulator/apimart/errors.js';
import { ImageSizeError } from '../emulator/apimart/images/render.js';
import { EmulatorListenError, EmulatorRateLimitsError } from '../emulator/index.js';
import { WebhookConfigError } from '../emulator/apimart/webhooks.js';
import { CsvHeaderError } from '../manifest/items-file.js';
import * as storage from '../storage/errors.js';
import { UnsafeStoragePathError } from '../storage/result-store.js';
import { WebhookServerError } from '../webhook/server.js';
import { accountRefusal } from '../workflows/tracking.js';

const details = { endpoint: 'GET /v1/tasks/{id}' };

/** One instance of every error class there is. */
const ERRORS: PixelmillError[] = [
  new api.ImageApiError('api_unexpected_status', false, 'm', details),
  new api.BadRequestError('m', details),
  new api.InvalidRequestError('m', details),
  new api.AuthenticationError('m', details),
  new api.InsufficientCreditsError('m', details),
  new api.PermissionDeniedError('m', details),
  new api.NotFoundError('m', details),
  new api.RateLimitError('m', details),
  new api.ServerError('m', details),
  new api.NetworkError('m', details),
  new api.TimeoutError('m', details),
  new api.InvalidResponseError('m', details),
  new api.ResultDownloadError('api_result_truncated', true, 'm', details),
  new api.ResultExpiredError('m', details),
  new storage.StorageBucketMissingError('m'),
  new storage.StorageAccessDeniedError('m'),
  new storage.StorageCredentialsMissingError('m'),
  new storage.StorageUnavailableError('m'),
  new storage.StorageRequestError('m'),
  new storage.StoragePathError('m'),
  new UnsafeStoragePathError('m'),
  new UserError('config_invalid', 'm'),
  new EmulatorListenError('emulator_listen_failed', 'm'),
  new EmulatorRateLimitsError('emulator_rate_limits_invalid', 'm'),
  new WebhookServerError('webhook_secret_missing', 'm'),
  new WebhookConfigError('webhook_url_invalid', 'm'),
  new EmulatorApiError('invalid_json'),
  new ImageSizeError('m'),
  // Internal signals, caught where they are thrown, are still under the root.
  new BodyTooLarge(8),
  new CsvHeaderError('m', { line: 1, col: 1 }),
];

/** The error classes a module exports below `root` (the root itself included). */
type ErrorClass = abstract new (...args: never[]) => Error;
function classesUnder(module: object, root: ErrorClass): ErrorClass[] {
  return Object.values(module).filter(
    (value): value is ErrorClass =>
      typeof value === 'function' && (value === root || value.prototype instanceof root),
  );
}

const names = (errors: readonly Error[]): string[] => errors.map((error) => error.name).sort();

describe('the error classes', () => {
  it('all extend PixelmillError and set their own name, a stable code and a retry flag', () => {
    for (const error of ERRORS) {
      expect(error).toBeInstanceOf(PixelmillError);
      // A subclass that forgot its `name` would carry its parent's.
      expect(error.name).toBe(error.constructor.name);
      expect(error.code).toMatch(/^[a-z][a-z0-9]*(_[a-z0-9]+)*$/);
      expect(typeof error.retryable).toBe('boolean');
    }
  });

  it('are all in the list above, so a new class cannot skip these checks', () => {
    const listed = new Set<unknown>(ERRORS.map((error) => error.constructor));
    for (const cls of [...classesUnder(api, api.ImageApiError), ...classesUnder(storage, PixelmillError)]) {
      if (cls !== storage.StorageError) expect(listed).toContain(cls);
    }
  });

  it('say whether a retry may help: user errors never, the emulator as its status says', () => {
    expect(new UserError('x', 'm').retryable).toBe(false);
    expect(new EmulatorApiError('rate_limit_exceeded').retryable).toBe(true);
    expect(new EmulatorApiError('service_unavailable').retryable).toBe(true);
    expect(new EmulatorApiError('task_not_found').retryable).toBe(false);
  });

  it('make a bad CSV header a user error (one line, no stack) and an oversized answer not', () => {
    expect(new CsvHeaderError('m', { line: 1, col: 1 })).toBeInstanceOf(UserError);
    expect(new BodyTooLarge(8)).not.toBeInstanceOf(UserError);
    expect(new BodyTooLarge(8).message).toBe('body exceeds 8 bytes');
  });

  it('summarise as the report`s {type, code, message}', () => {
    expect(errorSummary(new api.RateLimitError('slow down', details))).toEqual({
      type: 'RateLimitError',
      code: 'api_rate_limited',
      message: 'slow down',
    });
    expect(
      api.toFailureDetails(new api.RateLimitError('slow down', { ...details, retryAfterMs: 5 })),
    ).toEqual({
      type: 'RateLimitError',
      code: 'api_rate_limited',
      message: 'slow down',
      retryable: true,
      retryAfterMs: 5,
    });
  });
});

describe('the failure type registry', () => {
  it('names every image API error class, and no other', () => {
    const apiErrors = ERRORS.filter((error) => error instanceof api.ImageApiError);
    expect(Object.values(ApiFailureType).sort()).toEqual(names(apiErrors));
  });

  it('names every storage error class, and no other', () => {
    const storageErrors = ERRORS.filter(
      (error) => error instanceof storage.StorageError || error instanceof UnsafeStoragePathError,
    );
    expect(Object.values(StorageFailureType).sort()).toEqual(names(storageErrors));
  });

  it('spells each name once, as its own key, in plain data', () => {
    for (const [key, value] of Object.entries(FailureType)) expect(value).toBe(key);
    expect(JSON.parse(JSON.stringify(FailureType))).toEqual(FailureType);
    const all = [ApiFailureType, StorageFailureType, ActivityFailureType, ItemFailureType].flatMap((group) =>
      Object.values(group),
    );
    expect(new Set(all)).toEqual(new Set(Object.values(FailureType)));
    expect(Object.isFrozen(FailureType)).toBe(true);
  });

  it('keeps the names workflows match byte for byte', () => {
    expect(FailureType.InsufficientCreditsError).toBe('InsufficientCreditsError');
    expect(FailureType.DeadlinePassed).toBe('DeadlinePassed');
    expect(FailureType.ApiNotConfigured).toBe('ApiNotConfigured');
    for (const type of ['InsufficientCreditsError', 'AuthenticationError', 'PermissionDeniedError']) {
      expect(accountRefusal({ type, code: 'c', message: 'm' })).toContain('pixelmill resume');
    }
    expect(accountRefusal({ type: FailureType.RateLimitError, code: 'c', message: 'm' })).toBeUndefined();
  });
});

describe('formatPath', () => {
  it('names a field as a person reads it, and the empty path by its root', () => {
    expect(formatPath(['items', 3, 'prompt'], '(top level)')).toBe('items[3].prompt');
    expect(formatPath([0, 'id'], '(root)')).toBe('[0].id');
    expect(formatPath([], '(top level)')).toBe('(top level)');
    expect(formatPath([], '(root)')).toBe('(root)');
  });
});
