// The text of every emulator error, in each language the spec allows (zh, en, ko, ja).
//
// The catalogue is typed as complete: adding an error code to errors.ts without its four texts
// does not compile, and a test checks that no text is empty. `{name}` marks a variable.
import type { Language } from './wire.js';
import type { ApiErrorCode, TaskErrorCode } from './errors.js';

export type MessageId = ApiErrorCode | TaskErrorCode;
export type MessageVars = Readonly<Record<string, string | number>>;

export const MESSAGES: Readonly<Record<MessageId, Readonly<Record<Language, string>>>> = {
  invalid_json: {
    en: 'The request body is not valid JSON.',
    zh: '请求体不是有效的 JSON。',
    ko: '요청 본문이 올바른 JSON이 아닙니다.',
    ja: 'リクエスト本文が有効な JSON ではありません。',
  },
  invalid_body: {
    en: 'The request body must be a JSON object.',
    zh: '请求体必须是 JSON 对象。',
    ko: '요청 본문은 JSON 객체여야 합니다.',
    ja: 'リクエスト本文は JSON オブジェクトでなければなりません。',
  },
  body_too_large: {
    en: 'The request body is larger than {max} bytes.',
    zh: '请求体超过 {max} 字节。',
    ko: '요청 본문이 {max}바이트를 초과합니다.',
    ja: 'リクエスト本文が {max} バイトを超えています。',
  },
  missing_prompt: {
    en: "The parameter 'prompt' is required.",
    zh: "缺少必填参数 'prompt'。",
    ko: "'prompt' 매개변수는 필수입니다.",
    ja: "パラメータ 'prompt' は必須です。",
  },
  invalid_prompt: {
    en: "The parameter 'prompt' must be a string.",
    zh: "参数 'prompt' 必须是字符串。",
    ko: "'prompt' 매개변수는 문자열이어야 합니다.",
    ja: "パラメータ 'prompt' は文字列でなければなりません。",
  },
  empty_prompt: {
    en: "The parameter 'prompt' must not be empty.",
    zh: "参数 'prompt' 不能为空。",
    ko: "'prompt' 매개변수는 비어 있을 수 없습니다.",
    ja: "パラメータ 'prompt' を空にすることはできません。",
  },
  invalid_model: {
    en: "The parameter 'model' must be one of: {allowed}.",
    zh: "参数 'model' 必须是以下之一：{allowed}。",
    ko: "'model' 매개변수는 다음 중 하나여야 합니다: {allowed}.",
    ja: "パラメータ 'model' は次のいずれかでなければなりません: {allowed}。",
  },
  invalid_size: {
    en: "The parameter 'size' must be one of: {allowed}.",
    zh: "参数 'size' 必须是以下之一：{allowed}。",
    ko: "'size' 매개변수는 다음 중 하나여야 합니다: {allowed}.",
    ja: "パラメータ 'size' は次のいずれかでなければなりません: {allowed}。",
  },
  invalid_resolution: {
    en: "The parameter 'resolution' must be one of: {allowed}.",
    zh: "参数 'resolution' 必须是以下之一：{allowed}。",
    ko: "'resolution' 매개변수는 다음 중 하나여야 합니다: {allowed}.",
    ja: "パラメータ 'resolution' は次のいずれかでなければなりません: {allowed}。",
  },
  invalid_n: {
    en: "The parameter 'n' must be an integer from 1 to {max}.",
    zh: "参数 'n' 必须是 1 到 {max} 之间的整数。",
    ko: "'n' 매개변수는 1에서 {max} 사이의 정수여야 합니다.",
    ja: "パラメータ 'n' は 1 から {max} までの整数でなければなりません。",
  },
  invalid_image_urls: {
    en: "The parameter 'image_urls' must be an array of http(s) URLs.",
    zh: "参数 'image_urls' 必须是 http(s) URL 数组。",
    ko: "'image_urls' 매개변수는 http(s) URL 배열이어야 합니다.",
    ja: "パラメータ 'image_urls' は http(s) URL の配列でなければなりません。",
  },
  too_many_image_urls: {
    en: "The parameter 'image_urls' may contain at most {max} URLs.",
    zh: "参数 'image_urls' 最多包含 {max} 个 URL。",
    ko: "'image_urls' 매개변수에는 URL을 최대 {max}개까지 넣을 수 있습니다.",
    ja: "パラメータ 'image_urls' に指定できる URL は最大 {max} 個です。",
  },
  invalid_webhook: {
    en: "The parameter 'webhook' must be an http(s) URL.",
    zh: "参数 'webhook' 必须是 http(s) URL。",
    ko: "'webhook' 매개변수는 http(s) URL이어야 합니다.",
    ja: "パラメータ 'webhook' は http(s) URL でなければなりません。",
  },
  invalid_language: {
    en: "The parameter 'language' must be one of: {allowed}.",
    zh: "参数 'language' 必须是以下之一：{allowed}。",
    ko: "'language' 매개변수는 다음 중 하나여야 합니다: {allowed}.",
    ja: "パラメータ 'language' は次のいずれかでなければなりません: {allowed}。",
  },
  invalid_task_ids: {
    en: "The parameter 'task_ids' must be an array of strings.",
    zh: "参数 'task_ids' 必须是字符串数组。",
    ko: "'task_ids' 매개변수는 문자열 배열이어야 합니다.",
    ja: "パラメータ 'task_ids' は文字列の配列でなければなりません。",
  },
  empty_task_ids: {
    en: "The parameter 'task_ids' must contain at least 1 id.",
    zh: "参数 'task_ids' 至少需要包含 1 个 ID。",
    ko: "'task_ids' 매개변수에는 ID가 1개 이상 있어야 합니다.",
    ja: "パラメータ 'task_ids' には少なくとも 1 つの ID が必要です。",
  },
  too_many_task_ids: {
    en: "The parameter 'task_ids' may contain at most {max} ids.",
    zh: "参数 'task_ids' 最多包含 {max} 个 ID。",
    ko: "'task_ids' 매개변수에는 ID를 최대 {max}개까지 넣을 수 있습니다.",
    ja: "パラメータ 'task_ids' に指定できる ID は最大 {max} 個です。",
  },
  invalid_rate_limits: {
    en: 'Invalid rate limits: {problems}.',
    zh: '速率限制无效：{problems}。',
    ko: '잘못된 속도 제한입니다: {problems}.',
    ja: 'レート制限の指定が無効です: {problems}。',
  },
  missing_api_key: {
    en: "No API key provided. Send the header 'Authorization: Bearer <API_KEY>'.",
    zh: "未提供 API 密钥。请发送请求头 'Authorization: Bearer <API_KEY>'。",
    ko: "API 키가 제공되지 않았습니다. 'Authorization: Bearer <API_KEY>' 헤더를 보내세요.",
    ja: "API キーが指定されていません。'Authorization: Bearer <API_KEY>' ヘッダーを送信してください。",
  },
  invalid_api_key: {
    en: 'The API key is invalid.',
    zh: 'API 密钥无效。',
    ko: 'API 키가 유효하지 않습니다.',
    ja: 'API キーが無効です。',
  },
  api_key_disabled: {
    en: 'The API key has been disabled.',
    zh: 'API 密钥已被禁用。',
    ko: 'API 키가 비활성화되었습니다.',
    ja: 'API キーは無効化されています。',
  },
  api_key_expired: {
    en: 'The API key has expired.',
    zh: 'API 密钥已过期。',
    ko: 'API 키가 만료되었습니다.',
    ja: 'API キーの有効期限が切れています。',
  },
  invalid_idempotency_key: {
    en: 'The Idempotency-Key header must be 1 to {max} printable ASCII characters.',
    zh: 'Idempotency-Key 请求头必须是 1 到 {max} 个可打印 ASCII 字符。',
    ko: 'Idempotency-Key 헤더는 1~{max}개의 인쇄 가능한 ASCII 문자여야 합니다.',
    ja: 'Idempotency-Key ヘッダーは 1～{max} 文字の印字可能な ASCII 文字でなければなりません。',
  },
  image_url_unreachable: {
    en: 'image_urls[{index}] could not be downloaded: {reason}.',
    zh: 'image_urls[{index}] 无法下载：{reason}。',
    ko: 'image_urls[{index}]을(를) 다운로드할 수 없습니다: {reason}.',
    ja: 'image_urls[{index}] をダウンロードできませんでした: {reason}。',
  },
  image_url_not_image: {
    en: 'image_urls[{index}] is not an image: {reason}.',
    zh: 'image_urls[{index}] 不是图片：{reason}。',
    ko: 'image_urls[{index}]은(는) 이미지가 아닙니다: {reason}.',
    ja: 'image_urls[{index}] は画像ではありません: {reason}。',
  },
  image_url_too_large: {
    en: 'image_urls[{index}] is too large ({reason}); the limit is {max_bytes} bytes.',
    zh: 'image_urls[{index}] 过大（{reason}）；上限为 {max_bytes} 字节。',
    ko: 'image_urls[{index}]이(가) 너무 큽니다 ({reason}). 한도는 {max_bytes}바이트입니다.',
    ja: 'image_urls[{index}] が大きすぎます（{reason}）。上限は {max_bytes} バイトです。',
  },
  idempotency_key_reused: {
    en: 'This Idempotency-Key was already used with a different request body.',
    zh: '此 Idempotency-Key 已用于不同的请求体。',
    ko: '이 Idempotency-Key는 이미 다른 요청 본문에 사용되었습니다.',
    ja: 'この Idempotency-Key は別のリクエスト本文ですでに使用されています。',
  },
  insufficient_credits: {
    en: 'Insufficient credits: this request needs {cost} and the balance is {balance}.',
    zh: '积分不足：此请求需要 {cost} 积分，当前余额为 {balance}。',
    ko: '크레딧이 부족합니다: 이 요청에는 {cost} 크레딧이 필요하지만 잔액은 {balance}입니다.',
    ja: 'クレジットが不足しています: このリクエストには {cost} クレジットが必要ですが、残高は {balance} です。',
  },
  task_forbidden: {
    en: 'You do not have access to this task.',
    zh: '无权访问此任务。',
    ko: '이 작업에 접근할 권한이 없습니다.',
    ja: 'このタスクへのアクセス権がありません。',
  },
  task_not_found: {
    en: 'Task not found.',
    zh: '任务不存在。',
    ko: '작업을 찾을 수 없습니다.',
    ja: 'タスクが見つかりません。',
  },
  task_expired: {
    en: 'The task has expired.',
    zh: '任务已过期。',
    ko: '작업이 만료되었습니다.',
    ja: 'タスクの有効期限が切れています。',
  },
  route_not_found: {
    en: 'No such endpoint.',
    zh: '接口不存在。',
    ko: '해당 엔드포인트가 없습니다.',
    ja: 'そのエンドポイントは存在しません。',
  },
  image_not_found: {
    en: 'Result image not found.',
    zh: '结果图片不存在。',
    ko: '결과 이미지를 찾을 수 없습니다.',
    ja: '結果画像が見つかりません。',
  },
  image_expired: {
    en: 'The result image has expired.',
    zh: '结果图片已过期。',
    ko: '결과 이미지가 만료되었습니다.',
    ja: '結果画像の有効期限が切れています。',
  },
  method_not_allowed: {
    en: 'Method {method} is not allowed on this endpoint; use {allowed}.',
    zh: '此接口不允许 {method} 方法，请使用 {allowed}。',
    ko: '이 엔드포인트에서는 {method} 메서드를 사용할 수 없습니다. {allowed}을(를) 사용하세요.',
    ja: 'このエンドポイントでは {method} メソッドは使用できません。{allowed} を使用してください。',
  },
  rate_limit_exceeded: {
    en: 'Rate limit exceeded; retry after {retry_after} s.',
    zh: '请求频率超出限制，请在 {retry_after} 秒后重试。',
    ko: '요청 한도를 초과했습니다. {retry_after}초 후에 다시 시도하세요.',
    ja: 'レート制限を超えました。{retry_after} 秒後に再試行してください。',
  },
  internal_error: {
    en: 'Internal server error; please retry.',
    zh: '服务器内部错误，请重试。',
    ko: '내부 서버 오류입니다. 다시 시도하세요.',
    ja: 'サーバー内部エラーです。再試行してください。',
  },
  bad_gateway: {
    en: 'Bad gateway; please retry.',
    zh: '网关错误，请重试。',
    ko: '게이트웨이 오류입니다. 다시 시도하세요.',
    ja: 'ゲートウェイエラーです。再試行してください。',
  },
  service_unavailable: {
    en: 'The service is temporarily unavailable; please retry.',
    zh: '服务暂时不可用，请重试。',
    ko: '서비스를 일시적으로 사용할 수 없습니다. 다시 시도하세요.',
    ja: 'サービスは一時的に利用できません。再試行してください。',
  },
  build_request_failed: {
    en: 'Failed to build the request for the model.',
    zh: '构建模型请求失败。',
    ko: '모델 요청을 만들지 못했습니다.',
    ja: 'モデルへのリクエストを作成できませんでした。',
  },
  generation_failed: {
    en: 'Image generation failed. The credits have been refunded.',
    zh: '图片生成失败，积分已退还。',
    ko: '이미지 생성에 실패했습니다. 크레딧이 환불되었습니다.',
    ja: '画像の生成に失敗しました。クレジットは返金されました。',
  },
  content_blocked: {
    en: 'The prompt was rejected by the content policy. No credits were charged.',
    zh: '提示词违反内容政策，已被拒绝，未扣除积分。',
    ko: '프롬프트가 콘텐츠 정책에 의해 거부되었습니다. 크레딧은 차감되지 않았습니다.',
    ja: 'プロンプトはコンテンツポリシーにより拒否されました。クレジットは請求されていません。',
  },
};

export function renderMessage(id: MessageId, language: Language, vars?: MessageVars): string {
  const template = MESSAGES[id][language];
  if (!vars) return template;
  return template.replace(/\{(\w+)\}/g, (whole, name: string) => (name in vars ? String(vars[name]) : whole));
}

/** `language` as given by a caller, or undefined when it is not one of the four. */
export function parseLanguage(value: unknown): Language | undefined {
  return value === 'en' || value === 'zh' || value === 'ko' || value === 'ja' ? value : undefined;
}
