/** @type {import('jest').Config} */
const common = {
  // Jest's node environment, failing a suite that leaves a handle open (test/support/environment.js).
  testEnvironment: "<rootDir>/test/support/environment.js",
  // Transpile only: each file on its own, no type information (npm test type-checks first, with tsc).
  transform: { "^.+\\.ts$": ["ts-jest", { tsconfig: "tsconfig.json", diagnostics: false }] },
};
// Two projects: `unit` needs no Pulumi CLI and runs in seconds (npm run test:unit); `e2e` drives the
// real engine and runs the built package, as a user's program does (npm test runs both).
module.exports = {
  testTimeout: 30000,
  verbose: true,
  // The e2e suites mostly wait (on the engine's start, on the simulator's status delays), each on
  // its own port, PULUMI_HOME and state: three at once keep 2 cores busy. Jest's default is one
  // worker per core but one.
  maxWorkers: 3,
  testSequencer: "<rootDir>/test/support/sequencer.js",
  // The default reporter, and one timing jest's own process as it ends its workers (CI's record).
  reporters: ["default", "<rootDir>/test/support/endReporter.js"],
  projects: [
    { ...common, displayName: "unit", roots: ["<rootDir>/test"], testMatch: ["**/*.test.ts"], testPathIgnorePatterns: ["/e2e/"] },
    { ...common, displayName: "e2e", roots: ["<rootDir>/test/e2e"], testMatch: ["**/*.test.ts"] },
  ],
};
