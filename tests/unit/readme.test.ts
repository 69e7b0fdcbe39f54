import fs from 'node:fs';
import path from 'node:path';
import { settingNames, loadSettings } from '../../src/config/settings';

const ROOT = path.resolve(__dirname, '../..');
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');

describe('README', () => {
  const readme = read('README.md');

  it('when the README opens, then the first thing under its title is one code block holding exactly the two set-up commands', () => {
    const match = /^# [^\n]+\n+```sh\n([\s\S]*?)```/.exec(readme);
    expect(match).not.toBeNull();
    const commands = match![1]!
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean);
    expect(commands).toEqual(['npm ci && npm start', 'npm ci && npm test']);
  });

  it('when the README is read, then it keeps the loading and account sections and links to every document in docs/', () => {
    expect(readme).toMatch(/^## Loading data$/m);
    expect(readme).toMatch(/^## Accounts$/m);
    for (const doc of fs.readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md'))) {
      if (doc === 'cli.md') continue; // reached from the loading and account sections
      expect(readme).toContain(`(docs/${doc})`);
    }
  });
});

describe('docs/operations.md', () => {
  const operations = read('docs/operations.md');
  const section = operations.slice(operations.indexOf('## Settings'), operations.indexOf('\n## ', operations.indexOf('## Settings') + 1));
  /** `| \`NAME\` | default | meaning |` rows of the settings table. */
  const rows = [...section.matchAll(/^\| `([A-Z0-9_]+)` \| ([^|]+) \|/gm)].map((m) => ({ name: m[1]!, default: m[2]!.trim() }));

  it('when the settings schema has a variable, then the settings table lists it, and lists nothing else', () => {
    expect(rows.map((r) => r.name).sort()).toEqual([...settingNames].sort());
  });

  it('when the settings table gives a default, then it is the default the schema applies', () => {
    const defaults = loadSettings({}) as Record<string, unknown>;
    for (const row of rows) {
      const documented = row.default === '—' ? undefined : row.default.replace(/^`|`$/g, '');
      // The documented text read as the setting (`1gb` is the number of bytes the schema makes of it).
      const meant = documented === undefined ? undefined : (loadSettings({ [row.name]: documented }) as Record<string, unknown>)[row.name];
      // An empty default (an empty host list) reads as none (—), like an unset one.
      const applied = defaults[row.name] === undefined || String(defaults[row.name]) === '' ? undefined : defaults[row.name];
      expect({ name: row.name, default: meant }).toEqual({ name: row.name, default: applied });
    }
  });
});

describe('documents', () => {
  const files = [
    'README.md',
    ...fs
      .readdirSync(path.join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ];
  /** GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens. */
  const anchors = (markdown: string) =>
    new Set(
      [...markdown.matchAll(/^#{1,6} (.+)$/gm)].map((m) =>
        m[1]!
          .toLowerCase()
          .replace(/[^\p{L}\p{N} -]/gu, '')
          .replace(/ /g, '-'),
      ),
    );

  it.each(files)('when %s links to a file or a heading in the repository, then it exists', (file) => {
    const text = read(file);
    const links = [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((l) => !/^[a-z]+:/.test(l));
    for (const link of links) {
      const [target, anchor] = link.split('#');
      const targetFile = target === '' ? file : path.join(path.dirname(file), target!);
      expect({ link, exists: fs.existsSync(path.join(ROOT, targetFile)) }).toEqual({ link, exists: true });
      if (anchor !== undefined && targetFile.endsWith('.md')) {
        expect({ link, heading: anchors(read(targetFile)).has(anchor) }).toEqual({ link, heading: true });
      }
    }
  });

  it('when code or a document cites a heading of docs/decisions.md, then that heading exists', () => {
    const headings = [...read('docs/decisions.md').matchAll(/^#{2,3} (.+)$/gm)].map((m) => m[1]!.toLowerCase());
    const isHeading = (name: string) => headings.some((h) => h.startsWith(name.toLowerCase()));
    const sources = (dir: string): string[] =>
      fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((d) => {
        const rel = path.join(dir, d.name);
        if (d.isDirectory()) return sources(rel);
        return /\.(ts|js|cjs|md)$/.test(d.name) ? [rel] : [];
      });
    const cited: string[] = [];
    for (const file of ['src', 'tests', 'db', 'bench', 'docs'].flatMap(sources)) {
      // `docs/decisions.md, Request counting` or `docs/decisions.md (Calls family)`, up to the end of the name.
      for (const m of read(file).matchAll(/docs\/decisions\.md(?:, ?| \()"?([A-Z][^"`():;.,\n]*)/g)) {
        const name = m[1]!.replace(/\s+and$/, '').trim();
        const found = isHeading(name) || name.split(' and ').every((part) => isHeading(part.trim()));
        cited.push(name);
        expect({ file, cites: name, found }).toEqual({ file, cites: name, found: true });
      }
    }
    expect(cited.length).toBeGreaterThan(30);
  });

  it.each(files)('when %s is read by a newcomer, then it points to no document outside the repository', (file) => {
    expect(read(file)).not.toMatch(/DESIGN|§|\bspec(ification)? ?\d/);
  });
});

describe('settings', () => {
  it('when a setting is bad, then loading stops with a message naming it', () => {
    expect(() => loadSettings({ PORT: 'eighty' })).toThrow(/PORT/);
    expect(() => loadSettings({ PLATFORM_TIMEZONE: 'Mars/Olympus' })).toThrow(/PLATFORM_TIMEZONE/);
    expect(() => loadSettings({ REQUIRE_HTTPS: 'maybe' })).toThrow(/REQUIRE_HTTPS/);
    expect(() => loadSettings({ TLS_CERT_FILE: '/x.pem' })).toThrow(/TLS_KEY_FILE/);
  });

  it('when nothing is set, then the defaults of docs/operations.md apply', () => {
    const s = loadSettings({});
    expect(s).toMatchObject({ PORT: 8080, PLATFORM_TIMEZONE: 'Europe/Copenhagen', OFF_HOURS_WEIGHT: 4 });
    expect(s.DATABASE_URL).toBeUndefined();
  });
});
