// API keys and webhook secrets never leave the emulator: not in answers (errors included), not in
// /_emulator/* outputs or stats, not in its log, not in config errors, even where a secret was
// written in the wrong place of a config file.
import { describe, expect, it } from 'vitest';
import { UserError } from '../common/errors.js';
import { parseEmulatorConfigText } from '../emulator/index.js';
import { expectNoSecrets } from './support/assertions.js';
import {
  call,
  ManualClock,
  startTestEmulator,
  startWebhookReceiver,
  submitTask,
  type RawResponse,
} from './support/emulator.js';

const KEY = 'sk-live-secret-active-7f3a';
const DISABLED = 'sk-live-secret-disabled-91c2';
const SECRET = 'whsec_secret_5e8d';
const GUESS = 'sk-live-secret-guess-0000';
const SECRETS = [KEY, DISABLED, SECRET, GUESS];

describe('secrets', () => {
  it('appear in no answer, admin output, stats or log line of a whole session', async () => {
    const clock = new ManualClock();
    const log: string[] = [];
    const receiver = await startWebhookReceiver([500]);
    const emulator = await startTestEmulator(
      {
        time_scale: 0.001,
        accounts: [
          {
            id: 'acct_secret',
            webhook_secret: SECRET,
            keys: [{ key: KEY }, { key: DISABLED, status: 'disabled' }],
          },
        ],
        generation: { queue_seconds: [1, 1], seconds: { '1K': [1, 1] } },
        rate_limits: { submit: { per_second: 1, burst: 2 } },
      },
      { clock, log: (line) => log.push(line) },
    );
    const answers: RawResponse[] = [];
    const keep = async (response: Promise<RawResponse>): Promise<RawResponse> => {
      answers.push(await response);
      return answers.at(-1)!;
    };

    const id = await submitTask(emulator, KEY, { prompt: 'signed', webhook: receiver.base });
    for (const key of [DISABLED, GUESS, `${KEY}x`, KEY, KEY]) {
      await keep(call(emulator.url, '/v1/images/generations', { key, body: { prompt: 'p' } }));
    }
    await keep(
      call(emulator.url, '/v1/images/generations', {
        headers: { authorization: `Basic ${KEY}` },
        body: { prompt: 'p' },
      }),
    );
    await keep(call(emulator.url, `/v1/tasks/${id}`, { key: GUESS }));
    await keep(call(emulator.url, '/v1/tasks/batch', { key: DISABLED, body: { task_ids: [id, KEY] } }));
    clock.advance(2);
    await receiver.until(1);
    await expect.poll(() => emulator.stats().webhooks.retryable_failure).toBe(1);
    clock.advance(10);
    await expect.poll(() => emulator.stats().webhooks.delivered).toBe(1);
    await keep(call(emulator.url, `/v1/tasks/${id}`, { key: KEY }));
    await keep(call(emulator.url, '/v1/tasks/batch', { key: KEY, body: { task_ids: [id, KEY] } }));
    for (const path of ['/_emulator/stats', '/_emulator/tasks', '/_emulator/requests']) {
      await keep(call(emulator.url, path));
    }

    expect(answers.map((answer) => answer.status)).toEqual([
      401, 401, 401, 200, 429, 401, 401, 401, 200, 200, 200, 200, 200,
    ]);
    expect(answers.at(-1)!.text).toContain('acct_secret/0');
    const texts = answers.flatMap((answer) => [answer.text, JSON.stringify(answer.headers)]);
    // A batch echoes the ids it was asked about, so a key sent as an id comes back by design.
    const echoed = answers[9]!;
    expect(echoed.json.data).toEqual([
      { id, status: 'completed' },
      { id: KEY, status: 'invalid_id' },
    ]);
    texts.splice(texts.indexOf(echoed.text), 1);
    expectNoSecrets([...texts, ...receiver.received, ...log, emulator.stats()], SECRETS);
  });

  it('appear in no config error, even when a key is written where a field name belongs', () => {
    const file = [
      'accounts:',
      '  - id: acct_a',
      `    ${SECRET}: true`,
      '    keys:',
      `      - ${KEY}: active`,
      `      - { key: ${DISABLED}, status: bogus }`,
      `      - { key: ${DISABLED} }`,
      'faults: { typo_rate: 1 }',
      '',
    ].join('\n');
    const error = (() => {
      try {
        parseEmulatorConfigText(file, 'emulator.yaml');
      } catch (thrown) {
        return thrown;
      }
      throw new Error('expected a UserError');
    })();
    expect(error).toBeInstanceOf(UserError);
    const { problems } = error as UserError;
    expect(problems).toEqual([
      'emulator.yaml:3:5 accounts[0]: unknown key (its name is not shown: it may be a secret)',
      expect.stringMatching(/^emulator\.yaml:5:9 accounts\[0\]\.keys\[0\]\.key: /),
      'emulator.yaml:5:9 accounts[0].keys[0]: unknown key (its name is not shown: it may be a secret)',
      expect.stringMatching(/^emulator\.yaml:6:\d+ accounts\[0\]\.keys\[1\]\.status: /),
      expect.stringMatching(/^emulator\.yaml:7:\d+ accounts\[0\]\.keys\[2\]\.key: duplicate API key/),
      'emulator.yaml:8:11 faults.typo_rate: unknown key',
    ]);
    expectNoSecrets([error, ...problems], SECRETS);
  });
});
