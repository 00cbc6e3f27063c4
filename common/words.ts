// Counted nouns in messages: "1 item", "2 items".

/** The noun for `n` of it: singular for exactly one. */
export function nounFor(n: number, noun: string, nouns = `${noun}s`): string {
  return n === 1 ? noun : nouns;
}

/** `n` and its noun: `1 item`, `2 items`. */
export function plural(n: number, noun: string, nouns = `${noun}s`): string {
  return `${n} ${nounFor(n, noun, nouns)}`;
}
