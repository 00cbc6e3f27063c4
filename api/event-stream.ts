// One server-sent-event stream of the API (a task's status stream): the call's answer classified
// as a JSON call's is (classify.ts), then each event's data handed over as it arrives until the
// caller has what it follows; parsed by eventsource-parser, which knows the format's corners (ids,
// comments, retry fields, lines split across chunks).
import { createParser } from 'eventsource-parser';
import { request, type Dispatcher } from 'undici';
import { errorFromStatus, errorFromTransport, type RequestContext } from './classify.js';
import { ImageApiError, InvalidResponseError } from './errors.js';
import { MAX_ERROR_BYTES, readText, type JsonCall } from './http.js';

export interface EventsCall extends Pick<JsonCall<never>, 'url' | 'headers' | 'signal' | 'errorFor'> {
  /** Each event's data in turn; true once the caller has what it followed the stream for. */
  onData: (data: string) => boolean;
}

/**
 * Follows the stream until `onData` says it is done; rejects, classified, on an error answer, a
 * broken connection, or a stream that ends first (the caller learned nothing final from it).
 */
export async function followEvents(
  dispatcher: Dispatcher,
  ctx: RequestContext,
  call: EventsCall,
): Promise<void> {
  let done = false;
  let refused: unknown;
  const parser = createParser({
    onEvent: ({ data }) => {
      if (done) return;
      try {
        done = call.onData(data);
      } catch (error) {
        refused = error;
        done = true;
      }
    },
  });
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
    for await (const chunk of body) {
      parser.feed(decoder.decode(chunk as Buffer, { stream: true }));
      if (done) {
        body.destroy();
        break;
      }
    }
  } catch (error) {
    if (call.signal?.aborted) throw error;
    if (error instanceof ImageApiError) throw error;
    throw errorFromTransport(ctx, error);
  }
  if (refused !== undefined) throw refused;
  if (!done)
    throw new InvalidResponseError(
      `${ctx.target} returned an invalid response: the stream ended before the task did`,
      {
        endpoint: ctx.endpoint,
      },
    );
}
