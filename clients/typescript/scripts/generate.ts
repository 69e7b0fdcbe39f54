import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { currentDocument } from './openapiDocument';
import { generatedFiles } from './generatedFiles';

/**
 * `npm run generate`: writes src/generated/ from the API of this checkout — the OpenAPI
 * document itself and the TypeScript types openapi-typescript derives from it.
 * `--check` writes nothing and exits 1 when a committed file differs (tests/generated.test.ts);
 * `--dir DIR` compares or writes another folder than src/generated.
 */
async function main(check: boolean, dir: string): Promise<number> {
  const files = await generatedFiles(await currentDocument());
  const stale: string[] = [];
  for (const [name, text] of Object.entries(files)) {
    const file = path.resolve(dir, name);
    let before: string | undefined;
    try {
      before = readFileSync(file, 'utf8');
    } catch {
      before = undefined;
    }
    const shown = path.relative(process.cwd(), file);
    if (before === text) {
      process.stdout.write(`up to date: ${shown}\n`);
    } else if (check) {
      stale.push(shown);
    } else {
      writeFileSync(file, text);
      process.stdout.write(`wrote ${shown}\n`);
    }
  }
  if (stale.length === 0) return 0;
  process.stderr.write(`${stale.join(' and ')} drifted from GET /api/openapi.json: run \`npm run generate\` in clients/typescript\n`);
  return 1;
}

const dirFlag = process.argv.indexOf('--dir');
const dir = dirFlag > 0 ? path.resolve(process.argv[dirFlag + 1]) : path.resolve(__dirname, '../src/generated');
main(process.argv.includes('--check'), dir).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`generate: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exitCode = 2;
  },
);
