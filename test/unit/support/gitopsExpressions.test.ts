// The workflow runner's expression evaluator (test/support/gitops/expressions.ts) on GitHub's rules, with
// the expressions the example workflows use: a wrong answer here would run or skip a job GitHub
// would not, and the runner's verdict on the workflows would be wrong with it.
import { condition, evaluate, interpolate } from "../../support/gitops/expressions";

const contexts = {
  github: {
    repository: "acme/shop",
    event: { action: "closed", schedule: "0 20 * * 1-5", pull_request: { number: 7, head: { repo: { full_name: "acme/shop" } } } },
  },
  inputs: {},
  vars: { TIGER_API_URL: "" },
  secrets: { TIGER_API_KEY: "k" },
};

test("&& and || yield an operand, not a boolean; a missing property is null and interpolates as ''", () => {
  expect(evaluate("inputs.action || (github.event.schedule == '0 20 * * 1-5' && 'pause' || 'resume')", contexts)).toBe("pause");
  expect(evaluate("inputs.action || (github.event.schedule == '0 6 * * 1-5' && 'pause' || 'resume')", contexts)).toBe("resume");
  expect(evaluate("'a' && 0", contexts)).toBe(0);
  expect(evaluate("'' || 'b' || 'c'", contexts)).toBe("b");
  expect(evaluate("github.event.nothing.deeper", contexts)).toBeNull();
  expect(interpolate("stack pr-${{ github.event.pull_request.number }}${{ vars.NONE }}", contexts)).toBe("stack pr-7");
});

test("== ignores case; if: without a status function means success() && (…)", () => {
  expect(
    condition("github.event.action == 'CLOSED' && github.event.pull_request.head.repo.full_name == github.repository", contexts, "success"),
  ).toBe(true);
  expect(condition("github.event.action != 'closed'", contexts, "success")).toBe(false);
  expect(condition("${{ github.event.action == 'closed' }}", contexts, "failure")).toBe(false);
  expect(condition("always() && github.event.action == 'closed'", contexts, "failure")).toBe(true);
  expect(condition(undefined, contexts, "failure")).toBe(false);
});

test("an expression it cannot read throws instead of guessing", () => {
  expect(() => evaluate("hashFiles('**/package-lock.json')", contexts)).toThrow(/does not know the function hashFiles/);
  expect(() => evaluate("steps.x.outputs.y", contexts)).toThrow(/unknown context 'steps'/);
  expect(() => evaluate("github.event.action == 'closed", contexts)).toThrow(/unterminated string/);
});
