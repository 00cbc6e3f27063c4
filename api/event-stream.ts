// One server-sent-event stream of the API (a task's status stream): the call's answer classified
// as a JSON call's is (classify.ts), then each event's data handed over as it arrives until the
// caller has what it follows; parsed by eventsource-parser, which knows the format's corners (ids,
// comments, retry fields, lines split across chunks).
import { createParser } from 'eventsource-parser';
import { request, type Dispatcher } from 'undici';
import { errorFromStatus, errorFromTransport, type RequestContext } from './classify.js';
import { ImageApiError, InvalidResponseError } from './errors.js';
import { MAX_ERROR_BYTES, readText, type JsonCall } from './http.js';

export interface EventsCall<T> extends Pick<JsonCall<never>, 'url' | 'headers' | 'signal' | 'errorFor'> {
  /** Each event's data in turn: what the caller followed the stream for, or undefined to read on. */
  onData: (data: string) => T | undefined;
}

/** What is left of a stream once it told what it was followed for, read so its connection is kept. */
const DRAIN = { maxBytes: 16 * 1024, maxMs: 1_000 };

/**
 * Follows the stream until `onData` returns what it followed it for; rejects, classified, on an
 * error answer, a broken connection, or a stream that ends first (the caller learned nothing
 * final from it). The stream's end is read, within limits, so that its connection is reused (a
 * new TLS handshake per request otherwise).
 */
export async function followEvents<T>(
  dispatcher: Dispatcher,
  ctx: RequestContext,
  call: EventsCall<T>,
): Promise<T> {
  let followed: T | undefined;
  let refused: unknown;
  const parser = createParser({
    onEvent: ({ data }) => {
      if (followed !== undefined || refused !== undefined) return;
      try {
        followed = call.onData(data);
      } catch (error) {
        refused = error;
      }
    },
  });
  const done = (): boolean => followed !== undefined || refused !== undefined;
  try {
    const response = await request(call.url, {
      dispatcher,
      method: 'GET',
      headers: { ...call.headers, accept: 'text/event-stream' },
      signal: call.signal,
    });
    const { statusCode, headers, body } = response;
    if (statusCode < 200 || statusCode >= 300) {
      const text = await readText(body, MAX_ERROR_BYTES, false);
      throw call.errorFor?.(statusCode, headers, text) ?? errorFromStatus(ctx, statusCode, headers, text);
    }
    const decoder = new TextDecoder();
    for await (const chunk of body.iterator({ destroyOnReturn: false })) {
      parser.feed(decoder.decode(chunk as Buffer, { stream: true }));
      if (done()) break;
    }
    if (done())
      await body
        .dump({ limit: DRAIN.maxBytes, signal: AbortSignal.timeout(DRAIN.maxMs) })
        .catch(() => undefined);
  } catch (error) {
    if (call.signal?.aborted) throw error;
    if (error instanceof ImageApiError) throw error;
    throw errorFromTransport(ctx, error);
  }
  if (refused !== undefined) throw refused;
  if (followed === undefined)
    throw new InvalidResponseError(
      `${ctx.target} returned an invalid response: the stream ended before the task did`,
      {
        endpoint: ctx.endpoint,
      },
    );
  return followed;
}
