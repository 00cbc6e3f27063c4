// Prompt templates and templated image_urls entries: `{column}` placeholders filled from an
// item's fields and variables, `{{` and `}}` for literal braces. A template is compiled once where
// it is written (its syntax said once, there) and rendered for every item that uses it.

/** A template's text cut into literal text and placeholder names. */
export interface CompiledTemplate {
  text: string;
  parts: readonly (string | { name: string })[];
  /** The placeholders it names, each once, in order. */
  names: readonly string[];
}

export interface TemplateOptions {
  /**
   * `image_urls` entries: a brace group with a comma (`photos/chair-{1,2}.png`) is a glob's
   * alternation, left for the glob, not a placeholder.
   */
  globBraces?: boolean;
}

/** The template of `text`, or the problems of its syntax (each a message without a location). */
export function compileTemplate(
  text: string,
  options: TemplateOptions = {},
): CompiledTemplate | { problems: string[] } {
  const parts: (string | { name: string })[] = [];
  const names: string[] = [];
  const problems: string[] = [];
  let literal = '';
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    if (char === '}') {
      if (text[i + 1] === '}') i++;
      else problems.push(`a lone "}" at character ${i + 1}: write "}}" for a literal brace`);
      literal += '}';
      continue;
    }
    if (char !== '{') {
      literal += char;
      continue;
    }
    if (text[i + 1] === '{') {
      literal += '{';
      i++;
      continue;
    }
    const end = text.indexOf('}', i + 1);
    const nextOpen = text.indexOf('{', i + 1);
    if (end === -1 || (nextOpen !== -1 && nextOpen < end)) {
      problems.push(`an unclosed "{" at character ${i + 1}: write "{{" for a literal brace`);
      literal += '{';
      continue;
    }
    const name = text.slice(i + 1, end);
    i = end;
    if (options.globBraces && name.includes(',')) {
      literal += `{${name}}`;
      continue;
    }
    if (name.trim() === '') {
      problems.push(`an empty placeholder "{${name}}": name a column, or write "{{}}" for literal braces`);
      continue;
    }
    if (literal !== '') parts.push(literal);
    literal = '';
    parts.push({ name });
    if (!names.includes(name)) names.push(name);
  }
  if (literal !== '') parts.push(literal);
  return problems.length > 0 ? { problems } : { text, parts, names };
}

/** The value of a placeholder for one item, or undefined when it has none. */
export type PlaceholderValues = (name: string) => string | undefined;

/** `template` filled with `values`, or the placeholders that have no value. */
export function renderTemplate(
  template: CompiledTemplate,
  values: PlaceholderValues,
): { text: string } | { missing: string[] } {
  // Joined once rather than appended part by part: a rope of small strings per prompt, kept for
  // 300,000 outputs, is what the garbage collector would walk.
  const pieces: string[] = [];
  let missing: string[] | undefined;
  for (const part of template.parts) {
    if (typeof part === 'string') {
      pieces.push(part);
      continue;
    }
    const value = values(part.name);
    if (value !== undefined) pieces.push(value);
    else if (!(missing ??= []).includes(part.name)) missing.push(part.name);
  }
  return missing ? { missing } : { text: pieces.join('') };
}
