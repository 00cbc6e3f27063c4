// The error-text catalogue: every request-level and task-level error has a text in zh, en, ko
// and ja, with the same variables in each, and each language really is a different text.
import { describe, expect, it } from 'vitest';
import { LANGUAGES } from '../common/generation.js';
import { API_ERRORS, errorEnvelope, TASK_ERRORS, taskError } from '../emulator/apimart/errors.js';
import { MESSAGES, parseLanguage, renderMessage } from '../emulator/apimart/i18n.js';

const ids = [...Object.keys(API_ERRORS), ...Object.keys(TASK_ERRORS)] as (keyof typeof MESSAGES)[];
const variables = (text: string) => [...text.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();

describe('error texts', () => {
  it('has exactly one entry per error code', () => {
    expect(Object.keys(MESSAGES).sort()).toEqual([...ids].sort());
  });

  it.each(ids)('has %s in all four languages with the same variables', (id) => {
    const texts = MESSAGES[id];
    for (const language of LANGUAGES)
      expect(texts[language].trim().length, `${id} ${language}`).toBeGreaterThan(0);
    for (const language of LANGUAGES)
      expect(variables(texts[language]), `${id} ${language}`).toEqual(variables(texts.en));
    expect(new Set(LANGUAGES.map((language) => texts[language])).size).toBe(4);
    expect(texts.zh).toMatch(/[\u4e00-\u9fff]/);
    expect(texts.ko).toMatch(/[\uac00-\ud7af]/);
    expect(texts.ja).toMatch(/[\u3040-\u30ff]/);
  });

  it('fills variables and leaves unknown ones visible', () => {
    expect(renderMessage('invalid_n', 'en', { max: 4 })).toBe(
      "The parameter 'n' must be an integer from 1 to 4.",
    );
    expect(renderMessage('invalid_n', 'en')).toContain('{max}');
  });

  it('builds envelopes with status-independent type, code and param', () => {
    expect(errorEnvelope('invalid_size', 'ko', { allowed: '1:1' })).toEqual({
      error: {
        message: "'size' 매개변수는 다음 중 하나여야 합니다: 1:1.",
        type: 'invalid_request_error',
        code: 'invalid_size',
        param: 'size',
      },
    });
    expect(errorEnvelope('task_forbidden', 'en').error).not.toHaveProperty('param');
    expect(taskError('generation_failed', 'zh')).toEqual({
      message: '图片生成失败，积分已退还。',
      type: 'generation_error',
      code: 'generation_failed',
    });
  });

  it('accepts only the four language codes', () => {
    expect(LANGUAGES.map(parseLanguage)).toEqual([...LANGUAGES]);
    for (const value of ['EN', 'fr', '', 'zh-CN', null, 1]) expect(parseLanguage(value)).toBeUndefined();
  });
});
