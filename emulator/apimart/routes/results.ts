// GET/HEAD /results/{task_id}/{index}.png: the {result_host} of the spec. Like the real result
// host it needs no Authorization header. An image exists only while its task is completed and
// not expired; the bytes come from the shared render cache, then the download faults apply.
import type { IncomingMessage, ServerResponse } from 'node:http';
import sharp from 'sharp';
import type { EmulatorContext } from '../context.js';
import { sendBytes } from '../../core/downloads.js';
import { EmulatorApiError } from '../errors.js';
import { isTaskIdShape } from '../task-id.js';
import { imageFaultOf } from '../images/faults.js';

export const RESULTS_PREFIX = '/results/';

/** JPEG copies of the images a jpeg_image_rate fault serves as PNG, by task and index (recent ones). */
const jpegCopies = new Map<string, Promise<Buffer>>();
const JPEG_COPIES_KEPT = 64;

function jpegCopy(key: string, png: Buffer): Promise<Buffer> {
  let copy = jpegCopies.get(key);
  if (!copy) {
    copy = sharp(png).jpeg({ quality: 90 }).toBuffer();
    jpegCopies.set(key, copy);
    if (jpegCopies.size > JPEG_COPIES_KEPT) jpegCopies.delete(jpegCopies.keys().next().value!);
  }
  return copy;
}

/** Serves `rest`, the path after `/results/`, e.g. `task_01H.../0.png`. */
export async function handleResult(
  ctx: EmulatorContext,
  req: IncomingMessage,
  res: ServerResponse,
  rest: string,
): Promise<void> {
  const match = /^([^/]+)\/(0|[1-9]\d{0,2})\.png$/.exec(rest);
  const taskId = match?.[1] ?? '';
  const index = Number(match?.[2]);
  const record = match && isTaskIdShape(taskId) ? ctx.store.get(taskId) : undefined;
  if (!record || index >= record.n) throw new EmulatorApiError('image_not_found');
  const phase = record.phaseAt(ctx.clock.now());
  if (phase === 'expired') throw new EmulatorApiError(record.failure ? 'image_not_found' : 'image_expired');
  if (phase !== 'completed') throw new EmulatorApiError('image_not_found');

  const fault = imageFaultOf(ctx.config.seed, record.id, ctx.config.faults);
  const rendered = ctx.images.get({
    prompt: record.prompt,
    index,
    size: record.size,
    resolution: record.resolution,
    ...(record.reference ? { reference: record.reference } : {}),
    ...(fault ? { fault } : {}),
  });
  const png = fault === 'jpeg' ? await jpegCopy(`${record.id}/${index}`, rendered) : rendered;
  const { truncate_download_rate: truncateRate, slow_download_kbps: kbps } = ctx.config.faults;
  const truncate = truncateRate > 0 && ctx.downloadRandom() < truncateRate;
  if (truncate && req.method !== 'HEAD') ctx.stats.recordFault('truncated_download');
  sendBytes(req, res, png, 'image/png', { truncate, kbps });
}
