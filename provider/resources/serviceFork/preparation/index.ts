// A fork's preparation: what a program declares (schema.ts), the SQL it sends (statements.ts), how
// its failures are said (failures.ts), the runner (run.ts) and the mark it leaves (mark.ts).
export {
  MASKS,
  type MaskRule,
  type Preparation,
  PreparationSchema,
  preparationDigest,
  type Prepared,
  PreparedSchema,
  type SampledEarlier,
  SampledEarlierSchema,
} from "./schema";
export { PreparationFailed, prepareFork, type PrepareTarget } from "./run";
export { MARK_SCHEMA, MARK_TABLE, markOf, type MarkRow, type MaskedSource, MaskedSourceSchema, MARK_TABLE_KIND, READ_MARK } from "./mark";
