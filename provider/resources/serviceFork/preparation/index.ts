// A fork's preparation: what a program declares (schema.ts), the SQL it sends (statements.ts), how
// its failures are said (failures.ts) and the runner (run.ts).
export {
  type Mask,
  MASKS,
  type MaskRule,
  type Preparation,
  PreparationSchema,
  preparationDigest,
  type Prepared,
  PreparedSchema,
} from "./schema";
export { prepareFork, type PrepareTarget } from "./run";
