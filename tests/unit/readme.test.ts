import fs from 'node:fs';
import path from 'node:path';
import { settingNames, loadSettings } from '../../src/config/settings';

describe('README', () => {
  const readme = fs.readFileSync(path.resolve(__dirname, '../../README.md'), 'utf8');

  it('when the settings schema has a variable, then the README settings table lists it', () => {
    for (const name of settingNames) expect(readme).toContain(`| \`${name}\` |`);
  });

  it('when the README opens, then its first two commands run the API and pass the tests', () => {
    const block = readme.split('```')[1];
    expect(block).toContain('npm ci && npm start');
    expect(block).toContain('npm ci && npm test');
  });
});

describe('settings', () => {
  it('when a setting is bad, then loading stops with a message naming it', () => {
    expect(() => loadSettings({ PORT: 'eighty' })).toThrow(/PORT/);
    expect(() => loadSettings({ PLATFORM_TIMEZONE: 'Mars/Olympus' })).toThrow(/PLATFORM_TIMEZONE/);
    expect(() => loadSettings({ REQUIRE_HTTPS: 'maybe' })).toThrow(/REQUIRE_HTTPS/);
    expect(() => loadSettings({ TLS_CERT_FILE: '/x.pem' })).toThrow(/TLS_KEY_FILE/);
  });

  it('when nothing is set, then the defaults of the README apply', () => {
    const s = loadSettings({});
    expect(s).toMatchObject({ PORT: 8080, PLATFORM_TIMEZONE: 'Europe/Copenhagen', OFF_HOURS_WEIGHT: 4 });
    expect(s.DATABASE_URL).toBeUndefined();
  });
});
