// A batch input file read as the Batch API validates it: JSONL, one request per line
// `{custom_id, method: "POST", url, body}`, at most `max_requests_per_batch` lines and
// `max_input_bytes`, custom_ids unique, every url the batch's endpoint. Each problem is a BatchError
// `{code, line, message, param}` in the failed batch's `errors.data` (the first 1,000 kept); a line
// whose body the Images API would refuse is not a validation error but a request that fails with
// that 400 in the error file, as a bad body fails at OpenAI.
import type { OpenAIConfig } from './config.js';
import { checkImageRequest, type ImageRequest } from './image-request.js';
import { OpenAIApiError, type ErrorBody } from './errors.js';

export interface BatchError {
  code: string;
  line: number | null;
  message: string;
  param: string | null;
}

export interface InputRequest {
  customId: string;
  /** 1-based line number in the input file. */
  line: number;
  /** The checked body, or the 400 the Images API answers it. */
  request: ImageRequest | { refused: ErrorBody };
}

const MAX_ERRORS_KEPT = 1_000;

export function readInput(
  data: Buffer,
  endpoint: string,
  limits: OpenAIConfig['limits'],
  models: readonly string[],
): { requests: InputRequest[]; errors: BatchError[] } {
  const errors: BatchError[] = [];
  const requests: InputRequest[] = [];
  const fail = (error: BatchError): void => {
    if (errors.length < MAX_ERRORS_KEPT) errors.push(error);
  };
  if (data.length > limits.max_input_bytes) {
    fail({
      code: 'file_too_large',
      line: null,
      message: `The batch input file is larger than the ${limits.max_input_bytes} maximum for this model. Please try again with a smaller batch.`,
      param: null,
    });
    return { requests, errors };
  }
  const lines = data.toString('utf8').split('\n');
  if (lines.at(-1)?.trim() === '') lines.pop();
  if (lines.length > limits.max_requests_per_batch) {
    fail({
      code: 'too_many_requests',
      line: null,
      message: `The batch input file has ${lines.length} requests, more than the ${limits.max_requests_per_batch} maximum per batch.`,
      param: null,
    });
    return { requests, errors };
  }
  if (lines.length === 0) {
    fail({ code: 'empty_file', line: null, message: 'The batch input file is empty.', param: null });
    return { requests, errors };
  }
  const seen = new Set<string>();
  lines.forEach((text, i) => {
    const line = i + 1;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      fail({
        code: 'invalid_json_line',
        line,
        message: 'This line is not parseable as valid JSON.',
        param: null,
      });
      return;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      fail({ code: 'invalid_request', line, message: 'Each line must be a JSON object.', param: null });
      return;
    }
    const fields = value as Record<string, unknown>;
    for (const param of ['custom_id', 'method', 'url', 'body'] as const) {
      if (fields[param] === undefined) {
        fail({
          code: 'missing_required_parameter',
          line,
          message: `Missing required parameter: '${param}'.`,
          param,
        });
        return;
      }
    }
    const customId = fields.custom_id;
    if (typeof customId !== 'string' || customId.length === 0) {
      fail({
        code: 'invalid_request',
        line,
        message: 'custom_id must be a non-empty string.',
        param: 'custom_id',
      });
      return;
    }
    if (fields.method !== 'POST') {
      fail({
        code: 'invalid_request',
        line,
        message: "Only the 'POST' method is supported.",
        param: 'method',
      });
      return;
    }
    if (fields.url !== endpoint) {
      fail({
        code: 'invalid_url',
        line,
        message: 'The URL provided for this request does not match the batch endpoint.',
        param: 'url',
      });
      return;
    }
    if (seen.has(customId)) {
      fail({
        code: 'duplicate_custom_id',
        line,
        message:
          'The custom_id for this request is a duplicate of another request. The custom_id parameter must be unique for each request in a batch.',
        param: 'custom_id',
      });
      return;
    }
    seen.add(customId);
    const checked = checkImageRequest(fields.body, models);
    requests.push({
      customId,
      line,
      request: checked instanceof OpenAIApiError ? { refused: checked.body } : checked,
    });
  });
  return { requests, errors };
}
