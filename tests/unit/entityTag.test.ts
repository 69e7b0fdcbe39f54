import { entityTag, ifMatchAccepts, leadVersionTag } from '../../src/domain/entityTag';

describe('entity tags of leads', () => {
  const version = leadVersionTag('0A1B2C3D4E5F6A7B', '1234');

  it('when two bodies show one version, then their tags differ and both name the version for If-Match', () => {
    const a = entityTag(version, '{"priority":1}');
    const b = entityTag(version, '{"priority":1,"data":{}}');
    expect(a).not.toBe(b);
    expect(a).toBe(entityTag(version, '{"priority":1}'));
    expect(ifMatchAccepts(a, version)).toBe(true);
    expect(ifMatchAccepts(`"x", ${b}`, version)).toBe(true);
  });

  it('when If-Match holds a tag of the version alone (as answered before bodies had their part), then it names the version', () => {
    expect(ifMatchAccepts(`"${version}"`, version)).toBe(true);
  });

  it('when If-Match holds a weak tag, a tag of another version or no tag, then it names no version; * names any', () => {
    expect(ifMatchAccepts(`W/${entityTag(version, '{}')}`, version)).toBe(false);
    expect(ifMatchAccepts(entityTag(leadVersionTag('0A1B2C3D4E5F6A7B', '1235'), '{}'), version)).toBe(false);
    expect(ifMatchAccepts(version, version)).toBe(false);
    expect(ifMatchAccepts('', version)).toBe(false);
    expect(ifMatchAccepts(' * ', version)).toBe(true);
  });
});
