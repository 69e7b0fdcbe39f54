// Lint (npm test runs it): typescript-eslint's type-aware recommended rules over the project's
// TypeScript. Formatting is prettier's (npm run format:check), not the linter's.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: ['node_modules/', 'dist/', 'coverage/', 'test-output/', '.data/', 'clients/', 'packages/', '**/*.js', '**/*.cjs', '**/*.mjs'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // A name that starts with `_` is unused on purpose: the fourth parameter that makes an Express
      // error handler, a loop that only drains an iterator.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Underscore members are the private parts of Node and of libraries: they change without
    // notice between versions. Where the public API cannot do something, a small module of our
    // own does it (docs/decisions.md, "Runtime").
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'MemberExpression[property.name=/^_/]',
          message: 'A member starting with `_` is private to Node or to its library: use its public API or a module of our own.',
        },
        {
          selector: 'MemberExpression[computed=true][property.value=/^_/]',
          message: 'A member starting with `_` is private to Node or to its library: use its public API or a module of our own.',
        },
      ],
    },
  },
  {
    // Handlers read `Include` as the context's `include`, which the account's rights narrow:
    // parsing the parameter again would skip them.
    files: ['src/**/*.ts'],
    ignores: ['src/domain/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '/domain/include$',
              importNames: ['parseIncludeNames'],
              message: "Read the context's `include` (permittedIncludeNames): it leaves out the names the account's rights do not reach.",
            },
          ],
        },
      ],
    },
  },
);
