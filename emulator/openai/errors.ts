// OpenAI's error answers: `{"error": {"message", "type", "param", "code"}}` with the status, as the
// API reference and real answers show them. Route handlers throw an OpenAIApiError; the server
// turns it into the answer. A key is never echoed, not even masked as OpenAI does.
//
// Injected 5xx answers are OpenAI's own server_error body for a 500, and a proxy's page for 502 and
// 503, so that a client does not need a JSON body to retry a 5xx.

export interface ErrorBody {
  message: string;
  type: string;
  param: string | null;
  code: string | null;
  [extra: string]: unknown;
}

export class OpenAIApiError extends Error {
  override name = 'OpenAIApiError';

  constructor(
    readonly status: number,
    readonly body: ErrorBody,
    readonly headers: Record<string, string> = {},
  ) {
    super(body.message);
  }

  /** The wire body: `{"error": {...}}`. */
  get wire(): { error: ErrorBody } {
    return { error: this.body };
  }
}

export function invalidRequest(
  message: string,
  param: string | null = null,
  code: string | null = null,
  status = 400,
): OpenAIApiError {
  return new OpenAIApiError(status, { message, type: 'invalid_request_error', param, code });
}

export const missingKey = (): OpenAIApiError =>
  new OpenAIApiError(401, {
    message:
      "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY). You can obtain an API key from https://platform.openai.com/account/api-keys.",
    type: 'invalid_request_error',
    param: null,
    code: null,
  });

export const invalidKey = (): OpenAIApiError =>
  new OpenAIApiError(401, {
    message:
      'Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.',
    type: 'invalid_request_error',
    param: null,
    code: 'invalid_api_key',
  });

/** OpenAI answers an unknown route, or a known one with another method, this way. */
export const invalidUrl = (method: string, path: string): OpenAIApiError =>
  invalidRequest(`Invalid URL (${method} ${path})`, null, null, 404);

export const noSuchFile = (id: string): OpenAIApiError =>
  invalidRequest(`No such File object: ${id}`, 'id', null, 404);

export const noSuchBatch = (id: string): OpenAIApiError =>
  invalidRequest(`No such Batch object: ${id}`, 'id', null, 404);

export const missingParameter = (param: string): OpenAIApiError =>
  invalidRequest(`Missing required parameter: '${param}'.`, param, 'missing_required_parameter');

export const invalidValue = (param: string, value: unknown, supported: readonly string[]): OpenAIApiError =>
  invalidRequest(
    `Invalid value: '${String(value)}'. Supported values are: ${supported.map((s) => `'${s}'`).join(', ')}.`,
    param,
    'invalid_value',
  );

export const invalidType = (param: string, expected: string, value: unknown): OpenAIApiError =>
  invalidRequest(
    `Invalid type for '${param}': expected ${expected}, but got ${jsonType(value)} instead.`,
    param,
    'invalid_type',
  );

export function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string') return 'a string';
  if (typeof value === 'boolean') return 'a boolean';
  if (typeof value === 'number') return Number.isInteger(value) ? 'an integer' : 'a decimal';
  return typeof value;
}

/** A rate-limit refusal, as OpenAI words one ("Rate limit reached for ... on requests per min (RPM)"). */
export function rateLimited(
  what: {
    model: string;
    organization: string;
    unit: 'requests' | 'images';
    limit: number;
    waitSeconds: number;
  },
  headers: Record<string, string>,
): OpenAIApiError {
  const per = what.unit === 'requests' ? 'requests per min (RPM)' : 'images per min (IPM)';
  return new OpenAIApiError(
    429,
    {
      message:
        `Rate limit reached for ${what.model} in organization ${what.organization} on ${per}: ` +
        `Limit ${what.limit}, Used ${what.limit}, Requested 1. Please try again in ${what.waitSeconds}s. ` +
        'Visit https://platform.openai.com/account/rate-limits to learn more.',
      type: what.unit,
      param: null,
      code: 'rate_limit_exceeded',
    },
    headers,
  );
}

/** The body of a request that failed inside OpenAI (a 500 in the sync API and in an error file). */
export const SERVER_ERROR_BODY: ErrorBody = {
  message:
    'The server had an error processing your request. Sorry about that! You can retry your request, or contact us through our help center at help.openai.com if you keep seeing this error.',
  type: 'server_error',
  param: null,
  code: null,
};

/** What the image models' safety system answers (400); `requestId` is quoted as OpenAI does. */
export function moderationBlockedBody(requestId: string): ErrorBody {
  return {
    message: `Your request was rejected by the safety system. If you believe this is an error, contact us at help.openai.com and include the request ID ${requestId}. safety_violations=[sexual].`,
    type: 'image_generation_user_error',
    param: null,
    code: 'moderation_blocked',
    moderation_details: { moderation_stage: 'input', categories: ['sexual'] },
  };
}

/** An injected server fault: status, content type and body as OpenAI or its proxy sends them. */
export interface ServerFault {
  status: 500 | 502 | 503;
  contentType: string;
  body: string;
}

export const SERVER_FAULTS: readonly ServerFault[] = [
  {
    status: 500,
    contentType: 'application/json; charset=utf-8',
    body: JSON.stringify({ error: SERVER_ERROR_BODY }),
  },
  {
    status: 502,
    contentType: 'text/html',
    body: '<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>cloudflare</center>\r\n</body>\r\n</html>\r\n',
  },
  {
    status: 503,
    contentType: 'text/html',
    body: '<html>\r\n<head><title>503 Service Temporarily Unavailable</title></head>\r\n<body>\r\n<center><h1>503 Service Temporarily Unavailable</h1></center>\r\n<hr><center>cloudflare</center>\r\n</body>\r\n</html>\r\n',
  },
];
