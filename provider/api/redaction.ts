// Removing credentials and passwords from any text that came from outside, whole or in pieces: a
// secret cut short by whoever echoed it still goes.

/** No run of this many characters of a credential may survive redaction. */
const SECRET_FRAGMENT_CHARS = 6;
const REDACTED = "[REDACTED]";

/** Replaces each secret, whole or in pieces of 6 characters, with [REDACTED]: for any text that may quote one. */
export function secretRedactor(secrets: string[]): (text: string) => string {
  const whole = wholeRedactor(secrets);
  const fragments = fragmentRedactor(secrets);
  return (text) => fragments(whole(text));
}

/** Replaces every whole occurrence of each secret, longest first. */
export function wholeRedactor(secrets: string[]): (text: string) => string {
  const ordered = [...new Set(secrets.filter((s) => s.length > 0))].sort((a, b) => b.length - a.length);
  return (text) => ordered.reduce((t, s) => t.split(s).join(REDACTED), text);
}

/** Replaces every run of characters made of overlapping 6-character pieces of a secret: a secret cut short by whoever echoed it still goes. */
export function fragmentRedactor(secrets: string[]): (text: string) => string {
  const pieces = new Set<string>();
  for (const s of secrets) for (let i = 0; i + SECRET_FRAGMENT_CHARS <= s.length; i++) pieces.add(s.slice(i, i + SECRET_FRAGMENT_CHARS));
  return (text) => {
    if (pieces.size === 0) return text;
    const hidden = new Uint8Array(text.length);
    let found = false;
    for (let i = 0; i + SECRET_FRAGMENT_CHARS <= text.length; i++) {
      if (pieces.has(text.slice(i, i + SECRET_FRAGMENT_CHARS))) {
        hidden.fill(1, i, i + SECRET_FRAGMENT_CHARS);
        found = true;
      }
    }
    if (!found) return text;
    let out = "";
    let i = 0;
    while (i < text.length) {
      let j = i;
      const flag = hidden[i];
      while (j < text.length && hidden[j] === flag) j++;
      out += flag ? REDACTED : text.slice(i, j);
      i = j;
    }
    return out;
  };
}
