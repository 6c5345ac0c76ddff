// Text from outside (API answers, user-given names) shown to a person: control characters are
// written as escapes, so that no answer can forge a progress line or move the cursor.

/** C0 and C1 controls, DEL, the line and paragraph separators, and the bidirectional overrides
 *  that reorder what a terminal shows. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** `text` with every control character written as a visible escape (`\n`, `\x1b`, `\u202e`). */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (c) => {
    if (c === "\n") return "\\n";
    if (c === "\r") return "\\r";
    if (c === "\t") return "\\t";
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
  });
}

/** What a failure says: an error's message, or the thrown value as text. */
export const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));
