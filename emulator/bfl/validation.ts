// Request validation as BFL's API answers it: the API is FastAPI over pydantic v2 models (its
// OpenAPI document is FastAPI's, and it declares `422 HTTPValidationError`), so a bad request is
// a 422 whose `detail` lists every field's first problem as pydantic words it:
// `{type, loc: ['body', field], msg, input, ctx?}`. Fields are checked in the model's order and in
// pydantic's lax mode (a numeric string is an integer, 1024.0 is 1024, "yes" is true).
//
// The `type`/`msg` texts follow pydantic-core 2.x; they are the documented shape (HTTPValidationError)
// with pydantic's own words, not texts read from BFL's servers.

/** One entry of a 422's `detail`. */
export interface ValidationIssue {
  type: string;
  loc: (string | number)[];
  msg: string;
  input?: unknown;
  ctx?: Record<string, unknown>;
}

/** How a field of an input model is declared (a subset of pydantic enough for BFL's models). */
export type FieldSpec =
  | {
      kind: 'int';
      nullable?: boolean;
      default?: number | null;
      ge?: number;
      le?: number;
      multipleOf?: number;
    }
  | { kind: 'number'; nullable?: boolean; default?: number | null; ge?: number; le?: number }
  | { kind: 'string'; nullable?: boolean; default?: string | null }
  | { kind: 'bool'; nullable?: boolean; default?: boolean | null }
  | { kind: 'enum'; values: readonly string[]; nullable?: boolean; default?: string | null }
  /** pydantic's HttpUrl (max 2083 characters), as `webhook_url` is declared. */
  | { kind: 'http_url'; nullable?: boolean }
  /** A string the model checks itself after its type (an aspect ratio "w:h" in a range). */
  | { kind: 'aspect_ratio'; nullable?: boolean; default?: string | null; min: number; max: number };

/** A field spec plus whether the request must name it (pydantic: no default). */
export type FieldDecl = FieldSpec & { required?: boolean; secret?: boolean };

export type InputModel = readonly (readonly [name: string, decl: FieldDecl])[];

export type ValidatedInput = Record<string, unknown>;

const TRUE_WORDS = new Set(['1', 'on', 't', 'true', 'y', 'yes']);
const FALSE_WORDS = new Set(['0', 'off', 'f', 'false', 'n', 'no']);
const URL_MAX_LENGTH = 2083;

/** Number as pydantic-core prints a constraint (Rust's Display: 5.0 prints as 5). */
const show = (value: number): string => String(value);

/**
 * Validates a parsed JSON body against `model`. Unknown fields are ignored (pydantic's default)
 * unless `forbidExtra`. Returns the input with defaults filled in, or every problem found.
 */
export function validateBody(
  body: unknown,
  model: InputModel,
  forbidExtra = false,
): { input: ValidatedInput } | { issues: ValidationIssue[] } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return {
      issues: [
        {
          type: 'model_attributes_type',
          loc: ['body'],
          msg: 'Input should be a valid dictionary or object to extract fields from',
          input: body,
        },
      ],
    };
  }
  const record = body as Record<string, unknown>;
  const issues: ValidationIssue[] = [];
  const input: ValidatedInput = {};
  for (const [name, decl] of model) {
    if (!Object.hasOwn(record, name)) {
      if (decl.required) {
        issues.push({ type: 'missing', loc: ['body', name], msg: 'Field required', input: record });
      } else if ('default' in decl) {
        input[name] = decl.default;
      } else {
        input[name] = null;
      }
      continue;
    }
    const outcome = validateField(record[name], decl);
    if ('issue' in outcome) {
      const issue: ValidationIssue = { ...outcome.issue, loc: ['body', name] };
      // A secret sent back in an error would travel on to whatever logs the client keeps.
      if (decl.secret) delete issue.input;
      issues.push(issue);
    } else {
      input[name] = outcome.value;
    }
  }
  if (forbidExtra) {
    const known = new Set(model.map(([name]) => name));
    for (const [name, value] of Object.entries(record)) {
      if (!known.has(name))
        issues.push({
          type: 'extra_forbidden',
          loc: ['body', name],
          msg: 'Extra inputs are not permitted',
          input: value,
        });
    }
  }
  return issues.length > 0 ? { issues } : { input };
}

type FieldOutcome = { value: unknown } | { issue: Omit<ValidationIssue, 'loc'> };

function validateField(value: unknown, spec: FieldSpec): FieldOutcome {
  if (value === null) {
    if (spec.nullable) return { value: null };
    return { issue: nullIssue(spec) };
  }
  switch (spec.kind) {
    case 'int':
      return validateInt(value, spec);
    case 'number':
      return validateNumber(value, spec);
    case 'string':
      return typeof value === 'string'
        ? { value }
        : { issue: { type: 'string_type', msg: 'Input should be a valid string', input: value } };
    case 'bool':
      return validateBool(value);
    case 'enum':
      return validateEnum(value, spec.values);
    case 'http_url':
      return validateHttpUrl(value);
    case 'aspect_ratio':
      return validateAspectRatio(value, spec.min, spec.max);
  }
}

/** null where the field is not nullable: pydantic reports the type's own error for it. */
function nullIssue(spec: FieldSpec): Omit<ValidationIssue, 'loc'> {
  switch (spec.kind) {
    case 'int':
      return { type: 'int_type', msg: 'Input should be a valid integer', input: null };
    case 'number':
      return { type: 'float_type', msg: 'Input should be a valid number', input: null };
    case 'bool':
      return { type: 'bool_type', msg: 'Input should be a valid boolean', input: null };
    case 'enum':
      return enumIssue(null, spec.values);
    case 'http_url':
      return { type: 'url_type', msg: 'URL input should be a string or URL', input: null };
    default:
      return { type: 'string_type', msg: 'Input should be a valid string', input: null };
  }
}

function validateInt(value: unknown, spec: Extract<FieldSpec, { kind: 'int' }>): FieldOutcome {
  let n: number;
  if (typeof value === 'boolean') n = value ? 1 : 0;
  else if (typeof value === 'number') {
    if (!Number.isFinite(value) || !Number.isInteger(value))
      return {
        issue: {
          type: 'int_from_float',
          msg: 'Input should be a valid integer, got a number with a fractional part',
          input: value,
        },
      };
    n = value;
  } else if (typeof value === 'string') {
    const text = value.trim();
    if (!/^[+-]?\d+(\.0*)?$/.test(text))
      return {
        issue: {
          type: 'int_parsing',
          msg: 'Input should be a valid integer, unable to parse string as an integer',
          input: value,
        },
      };
    n = Number(text);
  } else {
    return { issue: { type: 'int_type', msg: 'Input should be a valid integer', input: value } };
  }
  // pydantic-core checks multiple_of, then le, then ge, and reports the first that fails.
  if (spec.multipleOf !== undefined && n % spec.multipleOf !== 0)
    return {
      issue: {
        type: 'multiple_of',
        msg: `Input should be a multiple of ${show(spec.multipleOf)}`,
        input: value,
        ctx: { multiple_of: spec.multipleOf },
      },
    };
  const bound = boundIssue(n, value, spec.ge, spec.le);
  return bound ? { issue: bound } : { value: n };
}

function validateNumber(value: unknown, spec: Extract<FieldSpec, { kind: 'number' }>): FieldOutcome {
  let n: number;
  if (typeof value === 'boolean') n = value ? 1 : 0;
  else if (typeof value === 'number') n = value;
  else if (typeof value === 'string') {
    n = value.trim() === '' ? NaN : Number(value.trim());
    if (Number.isNaN(n))
      return {
        issue: {
          type: 'float_parsing',
          msg: 'Input should be a valid number, unable to parse string as a number',
          input: value,
        },
      };
  } else {
    return { issue: { type: 'float_type', msg: 'Input should be a valid number', input: value } };
  }
  if (!Number.isFinite(n))
    return { issue: { type: 'finite_number', msg: 'Input should be a finite number', input: value } };
  const bound = boundIssue(n, value, spec.ge, spec.le);
  return bound ? { issue: bound } : { value: n };
}

function boundIssue(
  n: number,
  input: unknown,
  ge: number | undefined,
  le: number | undefined,
): Omit<ValidationIssue, 'loc'> | undefined {
  if (le !== undefined && n > le)
    return {
      type: 'less_than_equal',
      msg: `Input should be less than or equal to ${show(le)}`,
      input,
      ctx: { le },
    };
  if (ge !== undefined && n < ge)
    return {
      type: 'greater_than_equal',
      msg: `Input should be greater than or equal to ${show(ge)}`,
      input,
      ctx: { ge },
    };
  return undefined;
}

function validateBool(value: unknown): FieldOutcome {
  if (typeof value === 'boolean') return { value };
  if (typeof value === 'number') {
    if (value === 0 || value === 1) return { value: value === 1 };
    return {
      issue: {
        type: 'bool_parsing',
        msg: 'Input should be a valid boolean, unable to interpret input',
        input: value,
      },
    };
  }
  if (typeof value === 'string') {
    const word = value.trim().toLowerCase();
    if (TRUE_WORDS.has(word)) return { value: true };
    if (FALSE_WORDS.has(word)) return { value: false };
    return {
      issue: {
        type: 'bool_parsing',
        msg: 'Input should be a valid boolean, unable to interpret input',
        input: value,
      },
    };
  }
  return { issue: { type: 'bool_type', msg: 'Input should be a valid boolean', input: value } };
}

function enumIssue(value: unknown, values: readonly string[]): Omit<ValidationIssue, 'loc'> {
  const quoted = values.map((v) => `'${v}'`);
  const expected =
    quoted.length > 1
      ? `${quoted.slice(0, -1).join(', ')} or ${quoted[quoted.length - 1]}`
      : (quoted[0] ?? '');
  return { type: 'enum', msg: `Input should be ${expected}`, input: value, ctx: { expected } };
}

function validateEnum(value: unknown, values: readonly string[]): FieldOutcome {
  return typeof value === 'string' && values.includes(value)
    ? { value }
    : { issue: enumIssue(value, values) };
}

/**
 * pydantic's HttpUrl: http or https, a host, at most 2083 characters. A URL with a character
 * outside ASCII is refused as the OpenAPI document's `format: uri` (RFC 3986) says, rather than
 * turned into punycode: a client that sends one has a bug worth seeing.
 */
function validateHttpUrl(value: unknown): FieldOutcome {
  if (typeof value !== 'string')
    return { issue: { type: 'url_type', msg: 'URL input should be a string or URL', input: value } };
  if (value.length > URL_MAX_LENGTH)
    return {
      issue: {
        type: 'url_too_long',
        msg: `URL should have at most ${URL_MAX_LENGTH} characters`,
        input: value,
        ctx: { max_length: URL_MAX_LENGTH },
      },
    };
  const parsing = (error: string): FieldOutcome => ({
    issue: {
      type: 'url_parsing',
      msg: `Input should be a valid URL, ${error}`,
      input: value,
      ctx: { error },
    },
  });
  if (value === '') return parsing('input is empty');
  if (/[^\x21-\x7e]/.test(value)) return parsing('invalid international domain name');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return parsing(/^[a-z][a-z0-9+.-]*:/i.test(value) ? 'empty host' : 'relative URL without a base');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return {
      issue: {
        type: 'url_scheme',
        msg: "URL scheme should be 'http' or 'https'",
        input: value,
        ctx: { expected_schemes: "'http' or 'https'" },
      },
    };
  if (url.hostname === '') return parsing('empty host');
  return { value };
}

/** "w:h" with both terms positive integers and w/h within [min, max]. */
function validateAspectRatio(value: unknown, min: number, max: number): FieldOutcome {
  if (typeof value !== 'string')
    return { issue: { type: 'string_type', msg: 'Input should be a valid string', input: value } };
  const ratio = parseRatio(value);
  if (ratio === undefined || ratio.w / ratio.h < min || ratio.w / ratio.h > max) {
    const error = 'Aspect ratio must be between 21:9 and 9:21';
    return { issue: { type: 'value_error', msg: `Value error, ${error}`, input: value, ctx: { error } } };
  }
  return { value };
}

export function parseRatio(text: string): { w: number; h: number } | undefined {
  const match = /^\s*(\d{1,5})\s*:\s*(\d{1,5})\s*$/.exec(text);
  const w = Number(match?.[1]);
  const h = Number(match?.[2]);
  return w > 0 && h > 0 ? { w, h } : undefined;
}

/** The 422 for a body that is not JSON at all, as FastAPI words it. */
export function jsonInvalidIssue(error: unknown): ValidationIssue {
  const message = error instanceof Error ? error.message : 'JSON decode error';
  const position = /position (\d+)/.exec(message)?.[1];
  return {
    type: 'json_invalid',
    loc: ['body', position === undefined ? 0 : Number(position)],
    msg: 'JSON decode error',
    input: {},
    ctx: { error: 'Expecting value' },
  };
}

/** The 422 for a POST without a body, where the model requires one. */
export const MISSING_BODY_ISSUE: ValidationIssue = {
  type: 'missing',
  loc: ['body'],
  msg: 'Field required',
  input: null,
};
