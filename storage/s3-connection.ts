// How to reach an S3 location: the SDK client's settings from the location (endpoint, region,
// path style, all safe to record) and the environment (credentials: only from the standard AWS
// chain, never from a manifest or a workflow input).
import type { S3ClientConfig } from '@aws-sdk/client-s3';
import type { S3Location } from './s3-location.js';

/** Regions are irrelevant to most S3-compatible servers, but the SDK needs one to sign. */
const FALLBACK_REGION = 'us-east-1';

export interface S3ConnectionOptions {
  /** Where AWS_* variables are read from (region, endpoint, keys, profile); default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Explicit credentials (tests); default: the standard AWS chain. */
  credentials?: S3ClientConfig['credentials'];
  /**
   * Tries per call, with the SDK's backoff, for a transient failure (a 5xx, a dropped
   * connection). 1 (the default) in activities, whose retries are Temporal's; more in the CLI,
   * which has no Temporal around it.
   */
  maxAttempts?: number;
}

interface ResolvedConnection {
  config: S3ClientConfig;
  where: string;
}

export function s3ConnectionOf(options: S3ConnectionOptions & { location: S3Location }): ResolvedConnection {
  const env = options.env ?? process.env;
  const { location } = options;
  const endpoint = location.endpoint ?? env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL;
  const region =
    location.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? (endpoint ? FALLBACK_REGION : undefined);
  const config: S3ClientConfig = {
    maxAttempts: options.maxAttempts ?? 1,
    // S3-compatible servers often reject the SDK's default trailing CRC checksums; the sha256
    // that matters is computed here and sent explicitly.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  };
  if (endpoint !== undefined) config.endpoint = endpoint;
  if (region !== undefined) config.region = region;
  if (location.forcePathStyle !== undefined) config.forcePathStyle = location.forcePathStyle;
  if (options.credentials !== undefined) {
    config.credentials = options.credentials;
  } else if (env !== process.env && env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY) {
    // The first step of the standard chain, applied to an injected environment.
    config.credentials = {
      accessKeyId: env.AWS_ACCESS_KEY_ID,
      secretAccessKey: env.AWS_SECRET_ACCESS_KEY,
      ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}),
    };
  } else if (env !== process.env && env.AWS_PROFILE) {
    config.profile = env.AWS_PROFILE;
  }
  return { config, where: endpoint ?? `AWS S3 (${region ?? 'region from the AWS profile'})` };
}
