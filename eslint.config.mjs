import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", ".tmp/", "coverage/", "sdk/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["**/*.ts"],
    // Type-aware rules: a promise nobody awaits is a failure nobody sees.
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/await-thenable": "error",
    },
  },
  {
    rules: {
      // Provider methods load the package by name at run time (see provider/hosts/dynamic/serializedProvider.ts).
      "@typescript-eslint/no-require-imports": "off",
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", destructuredArrayIgnorePattern: "^_" },
      ],
      // Only the client module may speak HTTP.
      "no-restricted-imports": ["error", { paths: [{ name: "axios", message: "Only provider/api/request.ts talks HTTP." }] }],
    },
  },
  { files: ["provider/api/request.ts"], rules: { "no-restricted-imports": "off" } },
  {
    files: ["**/*.js", "**/*.mjs"],
    languageOptions: {
      globals: {
        require: "readonly",
        module: "writable",
        process: "readonly",
        console: "readonly",
        __dirname: "readonly",
        __filename: "readonly",
        fetch: "readonly",
        URL: "readonly",
      },
    },
  },
);
