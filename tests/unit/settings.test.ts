import { loadSettings } from '../../src/config/settings';

describe('loadSettings', () => {
  it('when DATABASE_URL or DATABASE_READ_URL is not a Postgres URL, then it is an invalid setting naming it', () => {
    expect(() => loadSettings({ DATABASE_URL: 'not-a-url' })).toThrow(
      /^invalid setting DATABASE_URL: must be a postgres:\/\/ or postgresql:\/\/ URL$/,
    );
    expect(() => loadSettings({ DATABASE_READ_URL: 'http://db.example:5432/lcm' })).toThrow(/^invalid setting DATABASE_READ_URL: /);
  });

  it('when DATABASE_URL is a postgres:// or postgresql:// URL, or empty, then it is taken', () => {
    expect(loadSettings({ DATABASE_URL: 'postgres://lcm:secret@db.example:5432/lcm' }).DATABASE_URL).toBe(
      'postgres://lcm:secret@db.example:5432/lcm',
    );
    expect(loadSettings({ DATABASE_URL: 'postgresql:///lcm?host=/var/run/postgresql' }).DATABASE_URL).toBe(
      'postgresql:///lcm?host=/var/run/postgresql',
    );
    expect(loadSettings({ DATABASE_URL: ' ' }).DATABASE_URL).toBeUndefined();
  });
});
