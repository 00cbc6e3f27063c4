// Task ids: `task_` + 26 Crockford base32 characters, ULID-like (10 characters of millisecond
// time, then 16 of seeded randomness). The shape lets the emulator tell a string that can never
// be one of its ids (batch `invalid_id`) from a well-formed id it does not know (`not_found`).
import type { Random } from '../core/random.js';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
export const TASK_ID_PATTERN = /^task_[0-9A-HJKMNP-TV-Z]{26}$/;

export function isTaskIdShape(value: string): boolean {
  return value.length === 31 && TASK_ID_PATTERN.test(value);
}

export function newTaskId(nowMs: number, random: Random): string {
  let time = '';
  let rest = Math.max(0, Math.floor(nowMs));
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[rest % 32] + time;
    rest = Math.floor(rest / 32);
  }
  let noise = '';
  for (let i = 0; i < 16; i++) noise += CROCKFORD[Math.floor(random() * 32)];
  return `task_${time}${noise}`;
}

/** `img_<id without the task_ prefix>_<index>`: the platform image id of one result. */
export function imageIdFor(taskId: string, index: number): string {
  return `img_${taskId.slice(5)}_${index}`;
}
