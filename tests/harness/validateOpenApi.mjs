// Validates the OpenAPI document given on standard input with an OpenAPI schema validator of its
// own, and writes its verdict as JSON. An ES module in a process of its own: jest's module system
// cannot load ES modules from its CommonJS tests (tests/integration/openapi.test.ts).
import { Validator } from '@seriousme/openapi-schema-validator';

let input = '';
for await (const chunk of process.stdin) input += chunk;
const validator = new Validator();
const result = await validator.validate(JSON.parse(input));
process.stdout.write(JSON.stringify({ ...result, version: validator.version }));
