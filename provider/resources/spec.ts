// What a resource is, declared once: its type's name, what it is for, its inputs (each rule and
// description), its state (which is also its outputs, each type and description), which outputs
// are secret and which state is the provider's own bookkeeping. From this alone come the program
// side's classes, the plugin's schema and every language's SDK (scripts/declarations.ts), and the
// lifecycle's parsing of what a host hands over (define.ts).
import type { z } from "zod";

/** The resource kinds, each a resource of the registry (registry.ts). */
export type ResourceKind = "ServiceFork" | "ServiceHA" | "VpcName";

/** Every resource lives in a project: its inputs (after check) and its state say which. */
export interface InProject {
  readonly projectId: string;
}

export interface ResourceSpec<
  T extends z.ZodType<InProject, object> = z.ZodType<InProject, object>,
  U extends z.ZodType<InProject & object> = z.ZodType<InProject & object>,
> {
  kind: ResourceKind;
  /** What the resource is and does, for every language's documentation. */
  description: string;
  /** The inputs: each one's rule, and its description. */
  inputs: T;
  /** The state as recorded, which is also the outputs: each one's type, and its description. */
  state: U;
  /** Fields of the state that are the provider's own bookkeeping, not outputs a program reads (none if unset). */
  internalState?: readonly string[];
  /** Outputs that are secret without the program asking (none if unset). */
  secretOutputs?: readonly string[];
  /**
   * Of those, the ones whose only secret is a URL's password (a connection string) or nothing
   * (digests): only that password is kept out of messages, not their other text in pieces (a
   * host's name, a column's). None if unset.
   */
  passwordOnlySecrets?: readonly string[];
}
