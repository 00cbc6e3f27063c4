// Public entry of the HTTP layer the providers' clients share (errors, classification, downloads):
// everything outside api/ imports from here.
export { ApiHttp, type ApiCall, type ApiHttpOptions, type EndpointStats } from './http-client.js';
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
