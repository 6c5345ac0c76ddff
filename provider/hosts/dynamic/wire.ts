// The dynamic provider's dialect, read and written here alone: the engine hands a dynamic provider
// property bags that carry, beside the declared properties, the serialized provider (`__provider`)
// and what the resource classes add in the program (program/declare.ts): who declares the resource
// (`__resourceName`, `__resourceUrn`) and which inputs the program made secret (`__secretInputs`,
// since the engine tells a dynamic provider no secret). State keeps them, so that a delete knows
// who it is. Below this host, no such key exists.
import type { Declarant } from "../../context/context";
import { PartialFailureError } from "../../errors";

/** A bag as the dynamic provider's engine hands it over and takes it back. */
export type EngineBag = Record<string, unknown>;

/** The keys of this dialect: never a declared property, never sent to the API. */
const isDialect = (key: string) => key.startsWith("__");
/** What the resource classes add, and state keeps. */
const BOOKKEEPING = ["__resourceName", "__resourceUrn", "__secretInputs"] as const;

/** What a bag says beside its properties: who declares the resource, the program's secret values. */
export interface Received {
  /** The declared properties, without this dialect's keys. */
  properties: EngineBag;
  resource: Declarant;
  secrets: string[];
  /** The bookkeeping to write back with what the lifecycle answers. */
  bookkeeping: EngineBag;
}

export function receive(bag: EngineBag | undefined): Received {
  const given = bag ?? {};
  const properties = Object.fromEntries(Object.entries(given).filter(([k]) => !isDialect(k)));
  const bookkeeping = Object.fromEntries(BOOKKEEPING.filter((k) => given[k] !== undefined).map((k) => [k, given[k]]));
  return { properties, resource: declarantOf(given), secrets: secretValuesOf(given), bookkeeping };
}

/**
 * Who declares a resource, as its class said in the program. State written before the URN was
 * recorded is known by its name alone.
 */
function declarantOf(bag: EngineBag): Declarant {
  const name = typeof bag.__resourceName === "string" ? bag.__resourceName : "(unnamed)";
  return { name, urn: typeof bag.__resourceUrn === "string" ? bag.__resourceUrn : `(named) ${name}` };
}

/** The values, as text, of the properties the program marked secret (`__secretInputs`). */
function secretValuesOf(bag: EngineBag): string[] {
  const values: string[] = [];
  const collect = (v: unknown): void => {
    if (typeof v === "string" || typeof v === "number") values.push(String(v));
    else if (Array.isArray(v)) v.forEach(collect);
    else if (typeof v === "object" && v !== null) Object.values(v).forEach(collect);
  };
  const names = bag.__secretInputs;
  if (Array.isArray(names)) for (const name of names) if (typeof name === "string" && !isDialect(name)) collect(bag[name]);
  return values;
}

/** What the lifecycle answered, as the engine keeps it: with the bookkeeping of `from` (and its serialized provider, if asked). */
export function answer(properties: object, from: Received, provider?: unknown): EngineBag {
  return { ...properties, ...from.bookkeeping, ...(provider === undefined ? {} : { __provider: provider }) };
}

/**
 * A failure after the remote object exists, as the dynamic provider's engine records it: its ID,
 * its state in this dialect (with the serialized provider), its reasons.
 */
export class DynamicPartialFailure extends PartialFailureError {
  readonly #properties: EngineBag;
  constructor(failure: PartialFailureError, from: Received, provider: unknown) {
    super(failure.id, failure.state, failure.cause);
    this.message = failure.message;
    this.reasons.splice(0, this.reasons.length, ...failure.reasons);
    this.#properties = answer(failure.state, from, provider);
  }
  /** What the engine records in state (the SDK's dynamic provider reads it). */
  get properties(): EngineBag {
    return this.#properties;
  }
}
