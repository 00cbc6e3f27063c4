// Every failure type pixelmill gives: the `type` of the Temporal failures its activities throw,
// which workflows match, and the `error.type` of report.jsonl. Spelled here once; each name is
// its own key (`FailureType.DeadlinePassed === 'DeadlinePassed'`). Plain data: workflows import it.

function typeNames<const T extends string>(...names: T[]): { readonly [K in T]: K } {
  return Object.freeze(Object.fromEntries(names.map((name) => [name, name]))) as { readonly [K in T]: K };
}

/** Class names of the image API client's errors (api/errors.ts), each thrown as its own failure type. */
export const ApiFailureType = typeNames(
  'ImageApiError',
  'BadRequestError',
  'InvalidRequestError',
  'AuthenticationError',
  'InsufficientCreditsError',
  'PermissionDeniedError',
  'NotFoundError',
  'RateLimitError',
  'ServerError',
  'NetworkError',
  'TimeoutError',
  'InvalidResponseError',
  'ResultDownloadError',
  'ResultExpiredError',
);

/** Class names of the object and file stores' errors (storage/), failure types and item errors alike. */
export const StorageFailureType = typeNames(
  'StorageBucketMissingError',
  'StorageAccessDeniedError',
  'StorageCredentialsMissingError',
  'StorageUnavailableError',
  'StorageRequestError',
  'StoragePathError',
  'UnsafeStoragePathError',
);

/** Failures activities throw by type alone (ApplicationFailure), not from an error class. */
export const ActivityFailureType = typeNames(
  'ApiNotConfigured',
  'DeadlinePassed',
  'InvalidRateLimit',
  'ManifestChanged',
  'PacerBacklog',
  'PlanIndexOutOfRange',
  'PlanMissing',
  'RateHeld',
  'ReferencesUnhosted',
  'SubmitRefused',
  'SubmitOutcomeUnknown',
  'TaskNotFinished',
);

/** Why an item ended without its images, when no failure of an activity says it (report.jsonl). */
export const ItemFailureType = typeNames(
  'ActivityFailed',
  'BudgetExhausted',
  'Cancelled',
  'DeadlinePassed',
  'GenerationFailed',
  'ImageCheckFailed',
  'NoResultUrls',
  'NotRun',
  'ResultExpired',
  'TaskExpired',
  'TaskLost',
  'TaskTimedOut',
);

export const FailureType = Object.freeze({
  ...ApiFailureType,
  ...StorageFailureType,
  ...ActivityFailureType,
  ...ItemFailureType,
});

export type FailureType = (typeof FailureType)[keyof typeof FailureType];
