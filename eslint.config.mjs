import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", ".tmp/", "coverage/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      // Provider methods load the package by name at run time (see provider/resource-kit.ts).
      "@typescript-eslint/no-require-imports": "off",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", destructuredArrayIgnorePattern: "^_" }],
      // Only the client module may speak HTTP.
      "no-restricted-imports": ["error", { paths: [{ name: "axios", message: "Only provider/client.ts talks HTTP." }] }],
    },
  },
  { files: ["provider/client.ts"], rules: { "no-restricted-imports": "off" } },
  { files: ["**/*.js", "**/*.mjs"], languageOptions: { globals: { require: "readonly", module: "writable", process: "readonly", console: "readonly", __dirname: "readonly" } } },
);
