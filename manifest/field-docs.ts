// What each manifest field means, keyed by its path in the JSON Schema (`a.b`, `items[].c`).
// Kept beside the zod schema rather than inside it so the validator stays readable; the JSON
// Schema (for editors) and docs/manifest.md (for people) both take their descriptions from here,
// and a test fails when a field has none.
import { MAX_IMAGE_URLS } from '../common/generation.js';
import { DEFAULT_MODEL } from '../providers/apimart/request.js';
import { LANGUAGES } from '../common/generation.js';
import {
  ASPECT_TOLERANCE,
  BLANK_MAX_STDEV,
  DEFAULT_CHECK_LEVELS,
  LONG_SIDE_TOLERANCE,
} from '../checks/image-checks.js';
import { DEFAULTS } from './normalize.js';
import { MAX_REFERENCE_BYTES } from './references.js';
import { DEFAULT_PATH_TEMPLATE, MAX_PROMPT_CHARS, PATH_TEMPLATE_FIELDS } from './schema.js';

const placeholders = PATH_TEMPLATE_FIELDS.map((field) => `{${field}}`).join(', ');

const itemParams = (prefix: string, inherits: string): Record<string, string> => ({
  [`${prefix}model`]: `Model name sent to the API. ${inherits}Default: \`${DEFAULT_MODEL}\`.`,
  [`${prefix}size`]: `Aspect ratio such as \`16:9\` or \`3:4\`, or \`auto\`. ${inherits}Default: \`${DEFAULTS.size}\`.`,
  [`${prefix}resolution`]: `\`1K\`, \`2K\` or \`4K\` (the price grows with it). ${inherits}Default: \`${DEFAULTS.resolution}\`.`,
  [`${prefix}n`]: `Images per prompt, 1-10. ${inherits}Default: ${DEFAULTS.n}.`,
  [`${prefix}image_urls`]: `Up to ${MAX_IMAGE_URLS} reference images for image-to-image: http(s) URLs, or local files and globs (\`photos/chair.jpg\`, \`photos/chair-*.png\`) relative to the manifest, PNG, JPEG, WebP or GIF, at most ${MAX_REFERENCE_BYTES / 1048576} MiB each, at most ${MAX_IMAGE_URLS} once globs are expanded. Local files are uploaded once to the run's store and passed to the provider as URLs (docs/references.md). ${inherits}`,
  [`${prefix}language`]: `Language of the API's error messages: ${LANGUAGES.join(', ')}. ${inherits}`,
});

export const FIELD_DOCS: Record<string, string> = {
  name: "The run's name: its Temporal workflow id is `pixelmill/<name>`, so running the same manifest again attaches to the same run. Letters, digits, `.`, `_`, `-`; at most 80 characters.",
  description: 'Free text for people; not used by the run.',
  api: 'Where the image API is. `PIXELMILL_API_BASE_URL` and `PIXELMILL_API_KEY` in the environment take precedence. Without any base URL, `pixelmill run` uses the built-in emulator (the run is labelled emulated).',
  'api.base_url': 'Base URL of the image API, e.g. `https://api.example.com`.',
  'api.api_key_env': `The *name* of the environment variable that holds the API key (never the key itself). Default: \`${DEFAULTS.apiKeyEnv}\`.`,
  defaults: 'Generation parameters every item inherits unless it sets its own.',
  ...itemParams('defaults.', ''),
  limits: 'How fast and how far the run may go.',
  'limits.requests_per_second':
    'Every API call of the run together (submits, batch lookups, task GETs), across all workers; result downloads are not API calls. `auto` (the default): pixelmill discovers what the provider admits, per endpoint group, from its answers (429 and Retry-After), shared fairly by every run and worker of the same API key. A number alone is a fixed rate, used as given; beside `submits_per_second` or `queries_per_second` it is a cap on the discovered rates.',
  'limits.submits_per_second':
    'A cap on the rate of submits (the model API), below the discovered rate: a number, or `auto` (no cap). Default: `auto`.',
  'limits.queries_per_second':
    'A cap on the rate of batch lookups and task GETs (the platform API), below the discovered rate: a number, or `auto` (no cap). Default: `auto`.',
  'limits.max_in_flight': `Most items submitted and not yet finished at any moment. Default: ${DEFAULTS.maxInFlight}.`,
  'limits.task_timeout': `How long a task may stay unfinished at the API (pending, processing, or a status pixelmill does not know) before it is given up: a duration such as \`90s\`, \`30m\`, \`2h\`, at least 10s. The item fails with \`task_timeout\`, which the default retry policy resubmits. Default: \`30m\`.`,
  'limits.deadline':
    'When the run must end: a duration from its start (`8h`) or a time (`2026-11-24T08:00:00+01:00`). Then nothing more is submitted; tasks already at the API are still collected (up to `task_timeout`); the run ends with its report, every unfinished item `cancelled` with the code `deadline`, and `pixelmill run` exits with 4. `pixelmill retry-failed RUN` continues those items later. Default: none.',
  'limits.budget_credits':
    'Stop submitting once the credits charged plus the cost of the next submit would exceed this; the rest is reported `skipped` with the reason. Default: no budget.',
  output: `Where images, \`report.jsonl\`, \`summary.json\` and \`index.html\` go: a directory (relative to the manifest) or an \`s3://bucket/prefix\` URL as a string, or an object. Default: \`out/<name>\`.`,
  'output.dir':
    'The output directory, relative to the manifest file unless absolute; or `s3://bucket/prefix` for an S3-compatible object store (docs/storage.md), whose credentials come from the standard AWS environment or profile, never from the manifest.',
  'output.endpoint':
    'S3 output only: the endpoint of an S3-compatible store, e.g. `http://127.0.0.1:9000`. Default: AWS, or `AWS_ENDPOINT_URL_S3` / `AWS_ENDPOINT_URL`.',
  'output.region':
    "S3 output only: the bucket's region. Default: `AWS_REGION`, the AWS profile's, or `us-east-1` with a custom endpoint.",
  'output.force_path_style':
    'S3 output only: address the bucket in the path (`http://host/bucket/key`) rather than the host name; most S3-compatible servers need it. Default: false.',
  'output.local_dir':
    "S3 output only: where the CLI keeps `retry-failed`'s records of the run (the run's plan, state and report are in the bucket, under `<prefix>/.pixelmill/` and `<prefix>/`), relative to the manifest unless absolute. Default: `.pixelmill/s3/<bucket>/<prefix>` beside the manifest.",
  'output.allow_non_empty':
    'Write into a local output folder that already holds other files (not an earlier pixelmill output). Default: `false`, so that a mistyped folder is refused before anything is spent; `pixelmill run --force` does the same for one run.',
  'output.public_url':
    "Local output only: the base URL at which the provider can fetch this output's `.pixelmill/references/` folder (where the CLI copies the items' local reference images), served by you; `PIXELMILL_PUBLIC_URL` on the workers does the same for every run. Not needed for an s3:// output (presigned URLs) or an embedded run (pixelmill serves them itself).",
  'output.path_template': `Path of each image inside the output directory, with the placeholders ${placeholders}; must contain {id} and {index}. Default: \`${DEFAULT_PATH_TEMPLATE}\`.`,
  retry: 'Which failed generations are submitted again.',
  'retry.max_attempts': `Most submissions of one item, the first included. Default: ${DEFAULTS.retryMaxAttempts}.`,
  'retry.on': `Error types or codes of failed tasks (from the API's task \`error\`) worth another attempt. Default: ${DEFAULTS.retryOn.map((type) => `\`${type}\``).join(', ')}.`,
  checks: `How each stored image is checked (decoded with libvips): \`error\` fails the item (with the type \`ImageCheckFailed\` and the code \`check_<name>\`, which \`retry.on\` may list to generate it again), \`warn\` keeps it and says so in the report, \`off\` skips the check. Tolerances: docs/checks.md.`,
  'checks.decodes': `The file decodes as an image, whole (a truncated or corrupt download fails). Default: \`${DEFAULT_CHECK_LEVELS.decodes}\`.`,
  'checks.format': `The image is in the format the result host announced (a JPEG sent as a PNG). Default: \`${DEFAULT_CHECK_LEVELS.format}\`.`,
  'checks.aspect_ratio': `Width / height is the item's \`size\`, within ${ASPECT_TOLERANCE * 100}%. Default: \`${DEFAULT_CHECK_LEVELS.aspect_ratio}\`.`,
  'checks.resolution': `The long side is the item's \`resolution\` tier (1024, 2048, 4096 px), within ${LONG_SIDE_TOLERANCE * 100}%. Default: \`${DEFAULT_CHECK_LEVELS.resolution}\`.`,
  'checks.blank': `The image is not blank: some channel's pixels vary by at least ${BLANK_MAX_STDEV} (standard deviation, 0-255). Default: \`${DEFAULT_CHECK_LEVELS.blank}\`.`,
  webhooks:
    'Terminal-state webhooks: the API tells the run when a task finishes, so the run skips most lookups and GETs and polls only as a safety net (3x slower). `pixelmill run` receives them itself in embedded mode; with a Temporal cluster run `pixelmill webhook-server`.',
  'webhooks.enabled': 'Set `false` to keep the block but turn webhooks off. Default: `true`.',
  'webhooks.public_url':
    'Address at which the API reaches the receiver (`PIXELMILL_WEBHOOK_URL` takes precedence); the API posts to `<public_url>/hooks/<shard>/callback`. Required with a Temporal cluster; in embedded mode the default is the local receiver.',
  'webhooks.secret_env': `The *name* of the environment variable that holds the account's webhook secret (never the secret itself). Default: \`${DEFAULTS.webhookSecretEnv}\`.`,
  items: 'The prompts, inline. Use `items_file` instead for large catalogs.',
  'items[].id':
    'Stable item id: used in file names and the report. Default: derived from the prompt and parameters, so it stays the same across runs. Ids must be unique.',
  'items[].prompt': `The prompt text, at most ${MAX_PROMPT_CHARS} characters.`,
  ...itemParams('items[].', 'Overrides `defaults`. '),
  items_file:
    'A CSV (with a header row) or JSONL file of items, relative to the manifest: the same fields as `items`. A CSV `image_urls` cell lists its entries separated by spaces or `|`; local paths in it are relative to the manifest.',
};
