import path from 'node:path';
import { HttpProblem } from '../../src/http/problem';
import { scalarBundle } from '../../src/http/apiReference';

// The reference's package in a folder where it is not installed (a checkout before `npm ci`).
jest.mock('../../src/config/paths', () => ({
  ...jest.requireActual<object>('../../src/config/paths'),
  API_REFERENCE_PACKAGE: path.join(__dirname, 'no-such-package'),
}));

describe('the interactive reference’s script', () => {
  it('when its package is not installed, then asking for it is a 503 problem naming the cause, not a 500', async () => {
    for (const coding of [undefined, 'gzip'] as const) {
      const refused = await scalarBundle(coding).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(refused).toBeInstanceOf(HttpProblem);
      expect(refused).toMatchObject({ status: 503, code: 'service_unavailable' });
      expect((refused as HttpProblem).detail).toMatch(/not installed/);
    }
  });
});
