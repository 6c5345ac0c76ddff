// Property values as the engine sends them to a provider plugin (protobuf Structs) and as the
// lifecycles read them (plain JSON): secrets unwrapped on the way in, and wrapped again on the way
// out, together with the outputs every program keeps secret.
import { Struct } from "google-protobuf/google/protobuf/struct_pb";
import { toPlainJson } from "../../rules/state";

/** The signature key and value of a secret on the wire (the engine's property-value encoding). */
const SIG = "4dabf18193072939515e22adb298388d";
const SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270";

export type Bag = Record<string, unknown>;

const isSecret = (v: unknown): v is { value: unknown } =>
  typeof v === "object" && v !== null && !Array.isArray(v) && (v as Bag)[SIG] === SECRET_SIG;

/** A value with every secret unwrapped (the lifecycles never see the wrapper). */
function revealed(v: unknown): unknown {
  if (isSecret(v)) return revealed(v.value);
  if (Array.isArray(v)) return v.map(revealed);
  if (typeof v === "object" && v !== null) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, revealed(x)]));
  return v;
}

/** What came in: the properties, plain, which of them were secret (top-level keys), and the secret values as text. */
export interface Received {
  props: Bag;
  secretKeys: Set<string>;
  /** The secret values as text, by the top-level key holding them. */
  secretValues: Map<string, string[]>;
}

export function receive(struct: Struct | undefined): Received {
  const raw = (struct?.toJavaScript() ?? {}) as Bag;
  const secretKeys = new Set(Object.keys(raw).filter((k) => containsSecret(raw[k])));
  return {
    props: revealed(raw) as Bag,
    secretKeys,
    secretValues: new Map([...secretKeys].map((k) => [k, secretValuesIn(raw[k], false)])),
  };
}

/** Every string or number inside a secret, as text: no message may show them. */
function secretValuesIn(v: unknown, inSecret: boolean): string[] {
  if (isSecret(v)) return secretValuesIn(v.value, true);
  if (typeof v === "string" || typeof v === "number") return inSecret ? [String(v)] : [];
  if (Array.isArray(v)) return v.flatMap((x) => secretValuesIn(x, inSecret));
  if (typeof v === "object" && v !== null) return Object.values(v).flatMap((x) => secretValuesIn(x, inSecret));
  return [];
}

function containsSecret(v: unknown): boolean {
  if (isSecret(v)) return true;
  if (Array.isArray(v)) return v.some(containsSecret);
  if (typeof v === "object" && v !== null) return Object.values(v).some(containsSecret);
  return false;
}

/**
 * Properties for the engine: plain JSON, each key in `secret` (a secret input's, or an output
 * every program keeps secret) wrapped as a secret.
 */
export function send(props: object | undefined, secret: Iterable<string>): Struct {
  const keys = new Set(secret);
  const out: Bag = {};
  for (const [k, v] of Object.entries(toPlainJson(props ?? {}))) out[k] = keys.has(k) && v !== null ? { [SIG]: SECRET_SIG, value: v } : v;
  return Struct.fromJavaScript(out as Parameters<typeof Struct.fromJavaScript>[0]);
}

/**
 * The settings of a Configure request: its `args` (typed values, sent by engines since 3.x), or
 * else its `variables` (`tigercloud:config:apiUrl` → text).
 */
export function settingsOfConfigure(args: Bag | undefined, variables: Map<string, string>): Bag {
  if (args && Object.keys(args).length > 0) return args;
  const fromVariables: Bag = {};
  for (const [key, value] of variables) {
    const m = /^tigercloud:config:(\w+)$/.exec(key) ?? /^tigercloud:(\w+)$/.exec(key);
    if (m?.[1]) fromVariables[m[1]] = value;
  }
  return fromVariables;
}
