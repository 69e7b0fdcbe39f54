import { ifNoneMatchMatches } from '../../src/http/conditionalRequest';

describe('ifNoneMatchMatches (RFC 9110 If-None-Match on a GET)', () => {
  const weak = 'W/"1b2-5kX0mZqT3b1cQy8g2b9wZk0sV0o"';
  const strong = '"lead-7-1234"';

  it('when the field names the current tag, then it matches, weak or strong on either side', () => {
    expect(ifNoneMatchMatches(weak, weak)).toBe(true);
    expect(ifNoneMatchMatches('"1b2-5kX0mZqT3b1cQy8g2b9wZk0sV0o"', weak)).toBe(true);
    expect(ifNoneMatchMatches(`W/${strong}`, strong)).toBe(true);
    expect(ifNoneMatchMatches(strong, strong)).toBe(true);
  });

  it('when the field is *, then it matches any current tag', () => {
    expect(ifNoneMatchMatches('*', weak)).toBe(true);
    expect(ifNoneMatchMatches(' * ', strong)).toBe(true);
  });

  it('when the field is a list, then any one of its tags matching is enough, with or without spaces', () => {
    expect(ifNoneMatchMatches(`"other", ${weak}`, weak)).toBe(true);
    expect(ifNoneMatchMatches(`W/"a",${strong},"b"`, strong)).toBe(true);
    // Two header fields arrive joined by a comma.
    expect(ifNoneMatchMatches(`"x", , ${weak}`, weak)).toBe(true);
  });

  it('when an opaque tag holds a comma, then the tag is read whole', () => {
    expect(ifNoneMatchMatches('"a,b"', '"a,b"')).toBe(true);
    expect(ifNoneMatchMatches('"a,b"', '"a"')).toBe(false);
    expect(ifNoneMatchMatches('"a,b"', '"b"')).toBe(false);
  });

  it('when no tag matches, the field is absent or not an entity tag, or there is no current tag, then it does not match', () => {
    expect(ifNoneMatchMatches('W/"not-it", "nor-this"', weak)).toBe(false);
    expect(ifNoneMatchMatches(undefined, weak)).toBe(false);
    expect(ifNoneMatchMatches('', weak)).toBe(false);
    expect(ifNoneMatchMatches('1b2-5kX0mZqT3b1cQy8g2b9wZk0sV0o', weak)).toBe(false);
    expect(ifNoneMatchMatches('w/"lead-7-1234"', strong)).toBe(false);
    expect(ifNoneMatchMatches('*', undefined)).toBe(false);
  });
});
