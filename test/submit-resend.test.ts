// A submit whose answer was lost after it was sent is not sent again to a provider that takes no
// idempotency key (activities/api-calls.ts, resendUnsafe): it could create, and bill, a second task.
import { describe, expect, it } from 'vitest';
import { resendUnsafe } from '../activities/api-calls.js';
import { NetworkError, ServerError, TimeoutError } from '../api/index.js';

const sent = new TimeoutError('POST /fal-ai/flux/dev failed: no response headers in time', {
  endpoint: 'POST /{model_id}',
  outcomeUnknown: true,
});
const notSent = new NetworkError('POST /fal-ai/flux/dev failed: network error ECONNREFUSED', {
  endpoint: 'POST /{model_id}',
  outcomeUnknown: false,
});

describe('resending a submit whose outcome is unknown', () => {
  it('fails the item on a provider without idempotency keys, saying why', () => {
    for (const provider of ['fal', 'replicate', 'bfl'] as const) {
      const failure = resendUnsafe(sent, { provider });
      expect(failure?.type, provider).toBe('SubmitOutcomeUnknown');
      expect(failure?.message).toMatch(/may have created this task.*retry-failed/);
    }
  });

  it('lets Temporal retry where the provider honours the key, or the request never left', () => {
    expect(resendUnsafe(sent, { provider: 'apimart' })).toBeUndefined();
    expect(resendUnsafe(sent, {})).toBeUndefined();
    expect(resendUnsafe(notSent, { provider: 'fal' })).toBeUndefined();
    // A 5xx is an answer: the provider did not take the task (fal documents 5xx as not billed).
    const answered = new ServerError('503', {
      endpoint: 'POST /{model_id}',
      httpStatus: 503,
      outcomeUnknown: true,
    });
    expect(resendUnsafe(answered, { provider: 'bfl' })).toBeUndefined();
  });
});
