// The floor lane: the end-to-end tests that matter most to a user on the oldest toolchain the
// package supports (scripts/toolchain.js: Node.js 20 with @pulumi/pulumi 3.248), run by
// scripts/test-lanes.js beside the main lane. Each entry is a suite and one test's full name in it;
// the lane fails when one of them did not run and pass, so a renamed test cannot drop out unseen.
module.exports.floorLane = [
  // create, preview verification, a clean second preview, destroy
  {
    suite: "test/e2e/serviceFork.e2e.test.ts",
    test: "fork lifecycle: preview only reads the source, up forks, second preview makes no request, destroy stops",
  },
  // adoption, with the example program a user copies
  {
    suite: "test/e2e/adopt.e2e.test.ts",
    test: 'examples/pr-fork with adoptServiceId: no forkService, the fork in state, no change after; another ID replaces (the old fork deleted: the example declares onDestroy "delete"); destroy deletes it',
  },
  // Pulumi's import still failing for a dynamic resource, as docs/refactoring-and-adoption.md says
  {
    suite: "test/e2e/adopt.e2e.test.ts",
    test: "Pulumi's import resource option still fails for a dynamic resource, with the message the README quotes, before any request of ours",
  },
  // pause and resume in place
  {
    suite: "test/e2e/paused.e2e.test.ts",
    test: "paused: true on a running fork stops it in place; back to false starts it; no replacement, no new fork",
  },
  // the HA handover when a ServiceHA is renamed
  {
    suite: "test/e2e/refactor.e2e.test.ts",
    test: "ServiceHA renamed without an alias: the old one's delete leaves the HA the new one declares (default and --parallel 1)",
  },
  // changes in place
  {
    suite: "test/e2e/inplace.e2e.test.ts",
    test: "rename, resize and environment, one up each: previews as an update, makes the one call, keeps the fork",
  },
  // HA created, changed in place, drift, destroy
  {
    suite: "test/e2e/resources.e2e.test.ts",
    test: "HA on a fork from the same program: create, change counts in place, out-of-band drift, destroy resets HA then stops",
  },
  // preview verification of a whole example program
  {
    suite: "test/e2e/preview.e2e.test.ts",
    test: "the demo example's program: preview reads the source and the VPC; an unchanged stack makes no request; a replacement reads again",
  },
];
