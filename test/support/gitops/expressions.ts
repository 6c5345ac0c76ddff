// GitHub Actions expressions (`${{ … }}` and `if:`), as much of the language as our workflows use,
// with GitHub's rules: `&&` and `||` yield an operand, `==` compares strings ignoring case, a
// missing property is null, null interpolates as ''. Anything else (an unknown function, an
// operator we do not read) throws, so that the runner never guesses what a workflow means.
// https://docs.github.com/en/actions/reference/workflows-and-actions/expressions

export type Value = string | number | boolean | null | { [key: string]: unknown } | unknown[];
export type Contexts = Record<string, unknown> & { [FUNCTIONS]?: Record<string, (args: unknown[]) => unknown> };
/** Where contexts carry the functions only a job can answer (hashFiles reads its workspace). */
export const FUNCTIONS = Symbol("functions");
/** The job's or step's status so far, for success(), failure(), always(), cancelled(). */
export type Status = "success" | "failure";

type Token = { kind: "string" | "number" | "name" | "op"; text: string; value?: Value };

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i] as string;
    if (/\s/.test(c)) {
      i++;
    } else if (c === "'") {
      let text = "";
      i++;
      for (;;) {
        if (i >= source.length) throw new Error(`unterminated string in expression: ${source}`);
        if (source[i] === "'" && source[i + 1] === "'") {
          text += "'";
          i += 2;
        } else if (source[i] === "'") {
          i++;
          break;
        } else text += source[i++];
      }
      tokens.push({ kind: "string", text, value: text });
    } else if (/[0-9]/.test(c)) {
      const m = /^[0-9]+(\.[0-9]+)?/.exec(source.slice(i)) as RegExpExecArray;
      tokens.push({ kind: "number", text: m[0], value: Number(m[0]) });
      i += m[0].length;
    } else if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z0-9_-]*/.exec(source.slice(i)) as RegExpExecArray;
      tokens.push({ kind: "name", text: m[0] });
      i += m[0].length;
    } else {
      const op = ["==", "!=", "<=", ">=", "&&", "||"].find((o) => source.startsWith(o, i)) ?? (/[!<>().,[\]]/.test(c) ? c : undefined);
      if (!op) throw new Error(`unexpected '${c}' in expression: ${source}`);
      tokens.push({ kind: "op", text: op });
      i += op.length;
    }
  }
  return tokens;
}

export function truthy(v: unknown): boolean {
  return !(v === false || v === null || v === undefined || v === 0 || v === "" || Number.isNaN(v));
}

function toNumber(v: unknown): number {
  if (v === null || v === undefined || v === false || v === "") return 0;
  if (v === true) return 1;
  if (typeof v === "number") return v;
  if (typeof v === "string") return /^\s*-?[0-9.]+\s*$/.test(v) ? Number(v) : NaN;
  return NaN;
}

function equal(a: unknown, b: unknown): boolean {
  if (typeof a === "string" && typeof b === "string") return a.toLowerCase() === b.toLowerCase();
  if (typeof a === typeof b || a === null || b === null) return a === b || (a == null && b == null);
  return toNumber(a) === toNumber(b);
}

function property(base: unknown, key: string): unknown {
  if (base === null || typeof base !== "object") return null;
  const found = Object.entries(base as Record<string, unknown>).find(([k]) => k.toLowerCase() === key.toLowerCase());
  return found === undefined ? null : found[1];
}

/** Evaluates one expression (without `${{ }}`). */
export function evaluate(source: string, contexts: Contexts, status: Status = "success"): unknown {
  const tokens = tokenize(source);
  let pos = 0;
  const peek = (): Token | undefined => tokens[pos];
  const take = (text?: string): Token => {
    const t = tokens[pos];
    if (!t || (text !== undefined && t.text !== text)) throw new Error(`expected ${text ?? "more"} in expression: ${source}`);
    pos++;
    return t;
  };
  const functions: Record<string, (args: unknown[]) => unknown> = {
    success: () => status === "success",
    failure: () => status === "failure",
    always: () => true,
    cancelled: () => false,
    contains: ([a, b]) =>
      Array.isArray(a)
        ? a.some((x) => equal(x, b))
        : String(a ?? "")
            .toLowerCase()
            .includes(String(b ?? "").toLowerCase()),
    toJSON: ([a]) => JSON.stringify(a ?? null, null, 2),
    startsWith: ([a, b]) =>
      String(a ?? "")
        .toLowerCase()
        .startsWith(String(b ?? "").toLowerCase()),
  };

  function primary(): unknown {
    const t = take();
    if (t.kind === "string" || t.kind === "number") return t.value;
    if (t.text === "(") {
      const v = or();
      take(")");
      return v;
    }
    if (t.text === "!") return !truthy(primary());
    if (t.kind !== "name") throw new Error(`unexpected '${t.text}' in expression: ${source}`);
    if (t.text === "true" || t.text === "false") return t.text === "true";
    if (t.text === "null") return null;
    if (peek()?.text === "(") {
      const fn = functions[t.text] ?? contexts[FUNCTIONS]?.[t.text];
      if (!fn) throw new Error(`the runner does not know the function ${t.text}(): ${source}`);
      take("(");
      const args: unknown[] = [];
      while (peek()?.text !== ")") {
        args.push(or());
        if (peek()?.text === ",") take(",");
      }
      take(")");
      return fn(args);
    }
    if (!(t.text in contexts)) throw new Error(`unknown context '${t.text}' in expression: ${source}`);
    let v: unknown = contexts[t.text];
    for (;;) {
      if (peek()?.text === ".") {
        take(".");
        v = property(v, take().text);
      } else if (peek()?.text === "[") {
        take("[");
        v = property(v, String(or()));
        take("]");
      } else return v;
    }
  }
  function comparison(): unknown {
    let left = primary();
    for (;;) {
      const op = peek()?.text;
      if (op !== "==" && op !== "!=" && op !== "<" && op !== ">" && op !== "<=" && op !== ">=") return left;
      take();
      const right = primary();
      if (op === "==") left = equal(left, right);
      else if (op === "!=") left = !equal(left, right);
      else {
        const [a, b] = [toNumber(left), toNumber(right)];
        left = op === "<" ? a < b : op === ">" ? a > b : op === "<=" ? a <= b : a >= b;
      }
    }
  }
  // `&&` and `||` yield an operand: `a && b` is b when a is truthy, `a || b` is a when a is truthy.
  function chain(op: "&&" | "||", operand: () => unknown): unknown {
    let left = operand();
    while (peek()?.text === op) {
      take();
      const right = operand();
      left = truthy(left) === (op === "&&") ? right : left;
    }
    return left;
  }
  function or(): unknown {
    return chain("||", () => chain("&&", comparison));
  }
  const value = or();
  if (pos !== tokens.length) throw new Error(`unexpected '${tokens[pos]?.text}' in expression: ${source}`);
  return value;
}

function asText(v: unknown): string {
  if (v === null || v === undefined) return "";
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

/** A YAML value with `${{ … }}` in it, as GitHub substitutes it. */
export function interpolate(text: string, contexts: Contexts): string {
  return text.replace(/\$\{\{(.*?)\}\}/gs, (_, expr: string) => asText(evaluate(expr, contexts)));
}

/** An `if:`: with or without `${{ }}`; without a status function it means `success() && (…)`. */
export function condition(source: string | boolean | undefined, contexts: Contexts, status: Status): boolean {
  if (source === undefined) return status === "success";
  if (typeof source === "boolean") return source && status === "success";
  const expr = source.trim().replace(/^\$\{\{([\s\S]*)\}\}$/, "$1");
  const statusAware = /\b(success|failure|always|cancelled)\(/.test(expr);
  return truthy(evaluate(statusAware ? expr : `success() && (${expr})`, contexts, status));
}
