// The pure parts of notifications: which events a run's end matches, which `notify:` entries
// want them, the Slack-compatible body, and the manifest's `notify:` field (a URL refused where
// a variable name belongs).
import { describe, expect, it } from 'vitest';
import { zeroCounts } from '../common/item-counts.js';
import type { NotifiedRun } from '../common/notify-types.js';
import { NotifySchema, notifyTargetsOf } from '../manifest/notify.js';
import { endEvents, matchingTargets, slackMessage } from '../notify/message.js';

const counts = (over: Partial<ReturnType<typeof zeroCounts>>) => ({ ...zeroCounts(), ...over });

describe("a run's end", () => {
  it('is completed only when every item completed', () => {
    expect(endEvents({ counts: counts({ completed: 5 }) })).toEqual(['completed']);
    expect(endEvents({ counts: counts({ completed: 4, failed: 1 }) })).toEqual(['failed']);
    expect(endEvents({ counts: counts({ completed: 4, expired: 1 }) })).toEqual(['failed']);
  });

  it('says the deadline and the budget, with failures if there were some', () => {
    expect(endEvents({ counts: counts({ completed: 2, cancelled: 3 }), endedByDeadline: 3 })).toEqual([
      'deadline',
    ]);
    expect(endEvents({ counts: counts({ completed: 2, skipped: 3, failed: 1 }) })).toEqual([
      'failed',
      'budget',
    ]);
  });

  it('cancelled by a person is nobody else’s news', () => {
    expect(endEvents({ counts: counts({ completed: 2, cancelled: 3 }) })).toEqual([]);
  });
});

describe('notify entries', () => {
  it('default to what needs a person, and each matching entry gets one message', () => {
    const targets = notifyTargetsOf([
      { url_env: 'SLACK_OPS' },
      { url_env: 'SLACK_ALL', on: ['completed', 'failed', 'failed'] },
    ])!;
    expect(targets).toEqual([
      { urlEnv: 'SLACK_OPS', on: ['failed', 'paused', 'deadline', 'budget'] },
      { urlEnv: 'SLACK_ALL', on: ['completed', 'failed'] },
    ]);
    expect(matchingTargets(targets, ['completed']).map((m) => m.target.urlEnv)).toEqual(['SLACK_ALL']);
    expect(matchingTargets(targets, ['failed', 'budget'])).toEqual([
      { target: targets[0], events: ['failed', 'budget'] },
      { target: targets[1], events: ['failed'] },
    ]);
  });

  it('refuse a URL where the name of its variable belongs, and unknown events', () => {
    const url = NotifySchema.safeParse([{ url_env: 'https://hooks.slack.com/services/T0/B0/x' }]);
    expect(url.success).toBe(false);
    expect(url.error!.issues[0]!.message).toMatch(/name\* of the environment variable .* not the URL/);
    expect(NotifySchema.safeParse([{ url_env: '1BAD' }]).success).toBe(false);
    expect(NotifySchema.safeParse([{ url_env: 'OK', on: ['finished'] }]).success).toBe(false);
    expect(NotifySchema.safeParse([{ url_env: 'OK', url: 'x' }]).success).toBe(false);
  });
});

describe('the message', () => {
  const run: NotifiedRun = {
    runId: 'pixelmill/shop',
    name: 'shop',
    schedule: 'nightly',
    outcome: '58 of 60 completed, 2 failed',
    counts: { completed: 58, failed: 2, cancelled: 0, expired: 0, skipped: 0 },
    itemCount: 60,
    creditsSpent: 61.456,
    reason: 'the API refused the key (401): <bad> & expired',
    reportFile: 's3://shop/out/report.jsonl',
    galleryFile: 'https://cdn.example/out/index.html',
  };

  it('has a text for notifications and blocks with the counts, credits, reason and links', () => {
    const message = slackMessage(run, ['failed'], {
      temporalUi: 'http://ui:8233/namespaces/default/workflows/x',
    });
    expect(message.text).toBe(
      'pixelmill: pixelmill/shop (schedule nightly) failed: 58 completed, 2 failed of 60; 61.46 credits. ' +
        'the API refused the key (401): <bad> & expired',
    );
    const body = JSON.stringify(message.blocks);
    expect(body).toContain('*Items* 58 completed, 2 failed of 60');
    expect(body).toContain('*Credits* 61.46 credits');
    // Slack's control characters escaped in mrkdwn, links as <url|label>, a location as code.
    expect(body).toContain('&lt;bad&gt; &amp; expired');
    expect(body).toContain('<http://ui:8233/namespaces/default/workflows/x|Temporal UI>');
    expect(body).toContain('report: `s3://shop/out/report.jsonl`');
    expect(body).toContain('<https://cdn.example/out/index.html|gallery>');
    for (const block of message.blocks) expect(['section', 'context']).toContain(block.type);
  });

  it('counts one credit as one', () => {
    expect(slackMessage({ ...run, creditsSpent: 1, reason: undefined }, ['completed']).text).toMatch(
      /; 1 credit$/,
    );
  });

  it('says a pause as needing a person, without counts it does not have', () => {
    const message = slackMessage({ runId: 'pixelmill/shop', name: 'shop', reason: 'top up' }, ['paused']);
    expect(message.text).toBe('pixelmill: pixelmill/shop paused: it needs a person. top up');
    expect(message.blocks).toHaveLength(2);
  });
});
