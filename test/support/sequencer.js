// The order jest starts suites in: the slow end-to-end suites first, so that the run's tail is not
// one of them starting late on a fresh clone (jest's own order, with no timings cached yet, is by
// file size, which put the unit suites first). With timings cached, the slowest first as measured.
const Sequencer = require("@jest/test-sequencer").default;

// Slowest first, as measured in CI (.ci/run prints the slowest suites).
const KNOWN_SLOW = [
  "maskingRedTeam",
  "gitops",
  "release",
  "prDatabaseGolden",
  "prDatabaseGoldenRefresh",
  "prDatabase",
  "prDatabaseRepositories",
  "kill-create",
  "kill-update",
  "projects",
  "plugin",
  "python",
  "refactor",
  "masking",
  "maskingRedTeam9",
  "maskingRedTeam10",
  "maskingRedTeam11",
  "maskingRedTeam12",
  "maskingRedTeam13",
  "maskingRedTeam14",
  "maskingRedTeam15",
  "maskingRedTeam16",
  "maskingRedTeam17",
  "maskingRedTeam18",
  "maskingRedTeam19",
  "maskingRedTeam20",
  "maskingRedTeam21",
  "maskingRedTeam22",
  "busy",
  "go",
  "paused",
  "database",
  "prepare",
  "inplace",
];
// Of the unit suites, the slowest (about 18 s on a busy machine) first: the run ends with the short ones.
const SLOW_UNIT = ["declarations", "hardening", "client"];
const rank = (test) => {
  const i = KNOWN_SLOW.findIndex((name) => test.path.endsWith(`/${name}.e2e.test.ts`));
  if (i >= 0) return i;
  if (test.path.includes("/e2e/")) return KNOWN_SLOW.length;
  const u = SLOW_UNIT.findIndex((name) => test.path.endsWith(`/${name}.test.ts`));
  return KNOWN_SLOW.length + 1 + (u >= 0 ? u : SLOW_UNIT.length);
};

class SlowSuitesFirst extends Sequencer {
  sort(tests) {
    const byJest = super.sort(tests);
    // super.sort sets each test's duration from the cache where one was recorded.
    if (byJest.every((t) => t.duration != null)) return byJest;
    return [...byJest].sort((a, b) => rank(a) - rank(b));
  }
}

module.exports = SlowSuitesFirst;
