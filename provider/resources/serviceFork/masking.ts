// The policy a team turns on with the provider setting requireMasking: a fork of a service tagged
// PROD declares masking rules, or says why none are needed (unmaskedReason). Judged at preview on
// the source check reads, and again by create before anything is forked. A fork of a fork whose
// data descends from a PROD service (forked_from, read back through the API) is held to the same,
// unless its source is a fork whose preparation masked and was checked: the mark that preparation
// left (preparation/mark.ts) is read in the new fork's copy of it after its first login, before
// its URL or password is published.
import type { Service } from "../../api/schemas";
import type { CallContext } from "../../context/context";
import { failureOf, openSession, type ServiceDatabase, type Session } from "../../database/session";
import { TigerCloudError } from "../../errors";
import { serviceUnlessGone } from "../../policies/gone";
import type { Limit } from "../../rules/inputSchemas";
import { isUnknown, type Pending } from "../../rules/inputs";
import { SETTING_SOURCES } from "../../settings";
import { messageOf } from "../../text";
import type { ForkInputs } from "./inputs";
import { MARK_SCHEMA, MARK_TABLE, MARK_TABLE_KIND, markOf, type MarkRow, type MaskedSource, READ_MARK } from "./preparation";
import { describeFailure } from "./preparation/failures";

type Declared = Pick<Pending<ForkInputs>, "prepare" | "unmaskedReason" | "name">;

const setting = () => {
  const { config, env } = SETTING_SOURCES.requireMasking;
  return `the provider setting requireMasking (${config} / ${env})`;
};
const forkLabel = (name: unknown) => (typeof name === "string" ? `fork "${name}"` : "this fork");

/** Whether the policy asks anything of this declaration: no masking rule and no unmaskedReason (both known). */
function unmasked(declared: Declared): boolean {
  const { prepare, unmaskedReason } = declared;
  // Not known yet (another resource's output): create judges it.
  if (isUnknown(prepare) || isUnknown(unmaskedReason)) return false;
  return unmaskedReason === undefined && maskingRules(prepare) === 0;
}

/** Why the policy refuses this fork of `source` (a failure of sourceServiceId), or undefined. */
export function maskingRefusal(ctx: CallContext, declared: Declared, source: Service): string | undefined {
  if (!ctx.requireMasking || source.metadata?.environment !== "PROD" || !unmasked(declared)) return undefined;
  return (
    `names service ${source.service_id}, tagged PROD, and ${forkLabel(declared.name)} declares no masking rule: ${setting()} ` +
    `refuses an unmasked copy of production. Declare masking rules for its personal data (prepare.mask), ` +
    `or say why none are needed (unmaskedReason).`
  );
}

/**
 * What preview says of an unmasked fork of a fork (it cannot read a database): `up` will look for
 * the source's mark when the source descends from a PROD service. Undefined when nothing is asked.
 */
export function maskingNote(ctx: CallContext, declared: Declared, source: Service): string | undefined {
  if (!ctx.requireMasking || source.metadata?.environment === "PROD" || !source.forked_from?.service_id || !unmasked(declared))
    return undefined;
  return (
    `ServiceFork: ${forkLabel(declared.name)} of service ${source.service_id} declares no masking rule. ${source.service_id} is a fork ` +
    `(of ${source.forked_from.service_id}): if its data descends from a service tagged PROD, ${setting()} accepts the fork only when ` +
    `${source.service_id} is a fork whose preparation masked and was checked, and \`up\` checks that by the mark its preparation left ` +
    `(${MARK_SCHEMA}.${MARK_TABLE}), read in the new fork's database after its first login, before its URL is published; without it the ` +
    `fork is stopped, unpublished.`
  );
}

/** How many masking rules a (checked) preparation declares. */
function maskingRules(prepare: unknown): number {
  if (typeof prepare !== "object" || prepare === null || !("mask" in prepare)) return 0;
  return Array.isArray(prepare.mask) ? prepare.mask.length : 0;
}

/** What requireMasking asks of a fork of a fork descended from PROD: its source's mark, read in the new fork. */
export interface SourceMark {
  /** The source: the fork the mark must name. */
  serviceId: string;
  /** What the API says the source was made from: the mark must say the same. */
  forkedFrom: string;
  /** The PROD service at the chain's end. */
  production: string;
  /** The fork declared, as the refusal names it. */
  fork: string;
}

/** Chains of forks longer than this are not followed (a loop would be one): their lineage is not known. */
export const MAX_CHAIN = 32;

/** The lineage of a service could not be told: never taken for "not production". */
class LineageUnknown extends TigerCloudError {}

/**
 * The services from `source` back to the one tagged PROD its data descends from (forked_from, read
 * back one service at a time), or undefined when the chain ends at a service that is no fork and no
 * PROD. A standby is no fork, but holds its primary's data: the chain goes on through it. Anything
 * that leaves the answer unknown throws: a service of another project, one gone, a failed read, a
 * chain that does not end.
 */
export async function productionAncestry(
  projectId: string,
  source: Service,
  read: (serviceId: string) => Promise<Service | undefined>,
): Promise<Service[] | undefined> {
  const chain = [source];
  let at = source;
  while (at.metadata?.environment !== "PROD") {
    const from = at.forked_from;
    if (!from?.service_id) return undefined;
    const parentId = from.service_id;
    if ((from.project_id ?? projectId) !== projectId)
      throw new LineageUnknown(
        `service ${at.service_id} was made from service ${parentId} of project ${from.project_id}, which is not followed`,
      );
    if (chain.some((s) => s.service_id === parentId) || chain.length >= MAX_CHAIN)
      throw new LineageUnknown(`the chain of forks from service ${source.service_id} does not end within ${MAX_CHAIN} services`);
    let parent: Service | undefined;
    try {
      parent = await read(parentId);
    } catch (err) {
      throw new LineageUnknown(`reading service ${parentId}, which service ${at.service_id} was made from, failed: ${messageOf(err)}`, {
        cause: err,
      });
    }
    if (!parent)
      throw new LineageUnknown(
        `service ${parentId}, which service ${at.service_id} was made from, no longer exists: what it held cannot be told`,
      );
    chain.push(parent);
    at = parent;
  }
  return chain;
}

/**
 * The requireMasking policy, judged again before anything is forked or published: preview may not
 * have read the source (no credentials then), and a fork whose preparation failed may drop its rules.
 * Throws for a fork of PROD, or of a fork whose lineage cannot be told; answers the mark `up` must
 * find for a fork of a fork descended from PROD; undefined when nothing is asked.
 */
export async function refuseUnmaskedProduction(ctx: CallContext, inputs: ForkInputs, deadline: number): Promise<SourceMark | undefined> {
  if (!ctx.requireMasking || inputs.unmaskedReason !== undefined || (inputs.prepare?.mask?.length ?? 0) > 0) return undefined;
  const client = ctx.client();
  const source = await serviceUnlessGone(client, inputs.projectId, inputs.sourceServiceId, deadline);
  if (!source) return undefined;
  const refusal = maskingRefusal(ctx, inputs, source);
  if (refusal) throw new TigerCloudError(`sourceServiceId ${refusal} Nothing was forked, or published.`);
  let chain: Service[] | undefined;
  try {
    chain = await productionAncestry(inputs.projectId, source, (id) => serviceUnlessGone(client, inputs.projectId, id, deadline));
  } catch (err) {
    if (!(err instanceof LineageUnknown)) throw err;
    throw new TigerCloudError(
      `sourceServiceId names service ${source.service_id}, a fork, and ${forkLabel(inputs.name)} declares no masking rule: whether its data ` +
        `descends from a service tagged PROD cannot be told (${err.message}), and ${setting()} does not take that for "not production". ` +
        `Declare masking rules (prepare.mask), or say why none are needed (unmaskedReason). Nothing was forked, or published.`,
      { cause: err },
    );
  }
  const production = chain?.at(-1);
  if (!production || !source.forked_from?.service_id) return undefined;
  return {
    serviceId: source.service_id,
    forkedFrom: source.forked_from.service_id,
    production: production.service_id,
    fork: forkLabel(inputs.name),
  };
}

/**
 * The source's mark, read in the new fork's database (its copy of the source) as tsdbadmin: one
 * small table, never the fork's data. Answers what the maskedSource output says; throws, naming
 * the source, the setting and the ways out, when the mark is missing or names another service.
 */
export async function checkSourceMark(
  target: ServiceDatabase & { serviceId: string },
  required: SourceMark,
  limit: Limit,
  open: (db: ServiceDatabase, timeoutMs: number) => Promise<Session> = openSession,
): Promise<MaskedSource> {
  const { serviceId, host, port, password } = target;
  const left = () => Math.max(1, limit.deadline - Date.now());
  const unreadable = (err: unknown): never => {
    if (err instanceof TigerCloudError) throw err;
    throw new TigerCloudError(
      `Reading the mark of service ${required.serviceId} in fork ${serviceId} (${MARK_SCHEMA}.${MARK_TABLE}) failed: ` +
        `${describeFailure(failureOf(err))}. ${setting()} holds the fork unpublished until it is read.`,
    );
  };
  const session = await open({ host, port, password }, left()).catch(unreadable);
  let found: ReturnType<typeof markOf>;
  try {
    // Names as written here, whatever search path the source's owner left on the role or database.
    await session.query("SET search_path = pg_catalog");
    const kind = (await session.query<{ kind: string }>(MARK_TABLE_KIND))[0]?.kind;
    if (kind !== undefined && kind !== "r") found = { problem: `holds ${MARK_SCHEMA}.${MARK_TABLE} as something other than a table` };
    else found = markOf(kind === "r" ? await session.query<MarkRow>(READ_MARK, [required.serviceId]) : [], required);
  } catch (err) {
    return unreadable(err);
  } finally {
    await session.end().catch(() => undefined);
  }
  if ("mark" in found) return found.mark;
  throw new TigerCloudError(
    `sourceServiceId names service ${required.serviceId}, not tagged PROD but a fork whose data descends from service ${required.production} ` +
      `(tagged PROD), and ${required.fork} declares no masking rule: ${setting()} accepts that only from a fork whose preparation masked ` +
      `and was checked, and fork ${serviceId}'s copy of it ${found.problem} (${MARK_SCHEMA}.${MARK_TABLE}). Fork a fork whose preparation ` +
      `masked (prepare.mask) instead, or declare masking rules (prepare.mask), or say why none are needed (unmaskedReason). ` +
      `Its URL and password were not published.`,
  );
}
