// Public entry of the image API client: everything outside api/ imports from here.
export {
  createImageApiClient,
  ENDPOINTS,
  ImageApiClient,
  type EndpointStats,
  type ImageApiClientOptions,
  type SubmitResult,
} from './client.js';
export type { DownloadedResult } from './download.js';
export {
  AuthenticationError,
  BadRequestError,
  ImageApiError,
  InsufficientCreditsError,
  InvalidRequestError,
  InvalidResponseError,
  isImageApiError,
  NetworkError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  ResultDownloadError,
  ResultExpiredError,
  ServerError,
  TimeoutError,
  toFailureDetails,
  type ImageApiErrorDetails,
  type ResultDownloadErrorCode,
} from './errors.js';
export { parseRetryAfter } from './classify.js';
export {
  isKnownTaskStatus,
  isTerminalStatus,
  type BatchItem,
  type GenerationRequest,
  type KnownTaskStatus,
  type Language,
  type Resolution,
  type SubmitAck,
  type Task,
  type TaskError,
  type TaskResult,
} from './schemas.js';
