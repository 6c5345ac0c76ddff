// The policy a team turns on with the provider setting requireMasking: a fork of a service tagged
// PROD declares masking rules, or says why none are needed (unmaskedReason). Judged at preview on
// the source check reads, and again by create before anything is forked.
import type { Service } from "../../api/schemas";
import type { CallContext } from "../../context/context";
import { TigerCloudError } from "../../errors";
import { serviceUnlessGone } from "../../policies/gone";
import { isUnknown, type Pending } from "../../rules/inputs";
import { SETTING_SOURCES } from "../../settings";
import type { ForkInputs } from "./inputs";

type Declared = Pick<Pending<ForkInputs>, "prepare" | "unmaskedReason" | "name">;

/** Why the policy refuses this fork of `source` (a failure of sourceServiceId), or undefined. */
export function maskingRefusal(ctx: CallContext, declared: Declared, source: Service): string | undefined {
  if (!ctx.requireMasking || source.metadata?.environment !== "PROD") return undefined;
  const { prepare, unmaskedReason, name } = declared;
  // Not known yet (another resource's output): create judges it.
  if (isUnknown(prepare) || isUnknown(unmaskedReason)) return undefined;
  if (unmaskedReason !== undefined || maskingRules(prepare) > 0) return undefined;
  const { config, env } = SETTING_SOURCES.requireMasking;
  const fork = typeof name === "string" ? `fork "${name}"` : "this fork";
  return (
    `names service ${source.service_id}, tagged PROD, and ${fork} declares no masking rule: the provider setting requireMasking ` +
    `(${config} / ${env}) refuses an unmasked copy of production. Declare masking rules for its personal data (prepare.mask), ` +
    `or say why none are needed (unmaskedReason).`
  );
}

/** How many masking rules a (checked) preparation declares. */
function maskingRules(prepare: unknown): number {
  if (typeof prepare !== "object" || prepare === null || !("mask" in prepare)) return 0;
  return Array.isArray(prepare.mask) ? prepare.mask.length : 0;
}

/**
 * The requireMasking policy, judged again before anything is forked or published: preview may not
 * have read the source (no credentials then), and a fork whose preparation failed may drop its rules.
 */
export async function refuseUnmaskedProduction(ctx: CallContext, inputs: ForkInputs, deadline: number): Promise<void> {
  if (!ctx.requireMasking || inputs.unmaskedReason !== undefined || (inputs.prepare?.mask?.length ?? 0) > 0) return;
  const source = await serviceUnlessGone(ctx.client(), inputs.projectId, inputs.sourceServiceId, deadline);
  const refusal = source && maskingRefusal(ctx, inputs, source);
  if (refusal) throw new TigerCloudError(`sourceServiceId ${refusal} Nothing was forked, or published.`);
}
