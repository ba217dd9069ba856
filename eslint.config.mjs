import nextCoreWebVitals from "eslint-config-next/core-web-vitals";
import nextTypescript from "eslint-config-next/typescript";

const config = [
  ...nextCoreWebVitals,
  ...nextTypescript,
  // Playwright fixtures take a parameter named `use`, which is not React's hook.
  { files: ["e2e/**"], rules: { "react-hooks/rules-of-hooks": "off" } },
  {
    ignores: [
      "node_modules/**",
      ".next/**",
      ".build/**",
      ".data/**",
      "lib/db/generated/**",
      "next-env.d.ts",
      "test-results/**",
      "bench/results/**",
      "clients/typescript/dist/**",
      "clients/typescript/src/generated/**",
    ],
  },
];

export default config;
