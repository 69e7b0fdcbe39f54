import {
  lowerCase,
  matchesAny,
  matchesPattern,
  parsePatternList,
  patternToSqlLike,
  projectSelection,
} from '../../src/domain/projectPatterns';

describe('patternToSqlLike', () => {
  it.each<[string, string]>([
    ['B2B*', 'b2b%'],
    ['*', '%'],
    ['Sales', 'sales'],
    ['S?les', 's_les'],
    ['100%_off', '100\\%\\_off'],
    ['a\\b', 'a\\\\b'],
    ['*?*', '%_%'],
    ['', ''],
    ['ÆBLE*', 'æble%'],
  ])('when the pattern is %j, then the LIKE pattern is %j', (pattern, like) => {
    expect(patternToSqlLike(pattern)).toBe(like);
  });
});

describe('matchesPattern', () => {
  it('when the pattern has *, then it matches zero or more characters', () => {
    expect(matchesPattern('B2B*', 'B2B')).toBe(true);
    expect(matchesPattern('B2B*', 'B2B Nordic')).toBe(true);
    expect(matchesPattern('*', '')).toBe(true);
    expect(matchesPattern('*', 'anything')).toBe(true);
    expect(matchesPattern('*Sales*', 'Outbound Sales DK')).toBe(true);
    expect(matchesPattern('B2B*', 'XB2B')).toBe(false);
  });

  it('when the pattern has ?, then it matches exactly one character', () => {
    expect(matchesPattern('S?les', 'Sales')).toBe(true);
    expect(matchesPattern('S?les', 'Sles')).toBe(false);
    expect(matchesPattern('S?les', 'Saales')).toBe(false);
    expect(matchesPattern('??', 'Æø')).toBe(true);
    expect(matchesPattern('?', '😀')).toBe(true);
  });

  it('when the pattern has no wildcard, then it is an anchored whole-value match', () => {
    expect(matchesPattern('Sales', 'Sales')).toBe(true);
    expect(matchesPattern('Sales', 'Sales 2')).toBe(false);
    expect(matchesPattern('Sales', 'My Sales')).toBe(false);
  });

  it('when cases differ, then it still matches', () => {
    expect(matchesPattern('b2b*', 'B2B Nordic')).toBe(true);
    expect(matchesPattern('ÆBLE', 'æble')).toBe(true);
  });

  it('when the pattern holds regular-expression or LIKE characters, then they are literal', () => {
    expect(matchesPattern('a.b', 'a.b')).toBe(true);
    expect(matchesPattern('a.b', 'axb')).toBe(false);
    expect(matchesPattern('100%', '100%')).toBe(true);
    expect(matchesPattern('100%', '1000')).toBe(false);
    expect(matchesPattern('a_b', 'axb')).toBe(false);
    expect(matchesPattern('(x)[y]{z}|^$+/\\-', '(x)[y]{z}|^$+/\\-')).toBe(true);
  });

  it('when the value has a line break, then * still spans it', () => {
    expect(matchesPattern('a*b', 'a\nb')).toBe(true);
    expect(matchesPattern('a?b', 'a\nb')).toBe(true);
  });
});

describe('matchesAny', () => {
  it('when any pattern matches, then it is true; when none or no patterns, then false', () => {
    expect(matchesAny(['Sales', 'B2B*'], 'B2B Nordic')).toBe(true);
    expect(matchesAny(['Sales', 'B2B*'], 'B2C')).toBe(false);
    expect(matchesAny([], 'Sales')).toBe(false);
  });
});

describe('parsePatternList', () => {
  it('when the list is comma separated with spaces and empty items, then items are trimmed and empties dropped', () => {
    expect(parsePatternList('B2B*, Sales ,,  ,S?les')).toEqual(['B2B*', 'Sales', 'S?les']);
    expect(parsePatternList('')).toEqual([]);
    expect(parsePatternList('*')).toEqual(['*']);
  });
});

describe('projectSelection', () => {
  it('when values mix patterns and project unique ids, then every value is a pattern and the id-shaped ones are ids too, lower-cased', () => {
    expect(projectSelection(['B2B*', 'A8BB3D80-82CA-D7FF-B115-A4BB37EEDBFE', 'Sales'])).toEqual({
      likePatterns: ['b2b%', 'a8bb3d80-82ca-d7ff-b115-a4bb37eedbfe', 'sales'],
      uniqueIds: ['a8bb3d80-82ca-d7ff-b115-a4bb37eedbfe'],
    });
  });

  it('when an id comes in braces (as Delphi and COM clients write a GUID), then it is the id without them', () => {
    expect(projectSelection(['{A8BB3D80-82CA-D7FF-B115-A4BB37EEDBFE}']).uniqueIds).toEqual(['a8bb3d80-82ca-d7ff-b115-a4bb37eedbfe']);
  });

  it('when a value only resembles an id (wildcards, one brace, wrong length), then it is a pattern only', () => {
    expect(
      projectSelection([
        'a8bb3d80-82ca-d7ff-b115-a4bb37eedbf?',
        '{a8bb3d80-82ca-d7ff-b115-a4bb37eedbfe',
        'a8bb3d80-82ca-d7ff-b115-a4bb37eedbfe0',
      ]).uniqueIds,
    ).toEqual([]);
  });
});

describe('lowerCase', () => {
  it('when a text has letters beyond ASCII, then each is lower-cased on its own, as Postgres lower() maps it', () => {
    expect(lowerCase('ÅRHUS Ærø ÉCOLE')).toBe('århus ærø école');
    // toLowerCase() of the whole text would end in a final sigma, and turn İ into i and a combining dot.
    expect(lowerCase('ΑΘΗΝΑΣ')).toBe('αθηνασ');
    expect(lowerCase('İSTANBUL')).toBe('istanbul');
    expect(lowerCase('Sol 🌞')).toBe('sol 🌞');
  });

  it('when a pattern and a name differ only in case, then they match whatever the letters', () => {
    expect(matchesPattern('ΑΘΗΝΑΣ*', 'αθηνασ 1')).toBe(true);
    expect(matchesPattern('istanbul', 'İstanbul')).toBe(true);
    expect(patternToSqlLike('İSTANBUL?')).toBe('istanbul_');
  });
});
