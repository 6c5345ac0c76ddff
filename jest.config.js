/** @type {import('jest').Config} */
const common = {
  testEnvironment: "node",
  transform: { "^.+\\.ts$": ["ts-jest", { tsconfig: "tsconfig.json", diagnostics: false }] },
};
// Two projects: `unit` needs no Pulumi CLI and runs in seconds (npm run test:unit); `e2e` drives the
// real engine and runs the built package, as a user's program does (npm test runs both).
module.exports = {
  testTimeout: 30000,
  verbose: true,
  projects: [
    { ...common, displayName: "unit", roots: ["<rootDir>/test"], testMatch: ["**/*.test.ts"], testPathIgnorePatterns: ["/e2e/"] },
    { ...common, displayName: "e2e", roots: ["<rootDir>/test/e2e"], testMatch: ["**/*.test.ts"] },
  ],
};
