import querystring from 'node:querystring';
import { decodeQueryComponent, parseQueryString } from '../../src/http/queryString';

/** Query strings as real clients send them: what Express's 'simple' parser (node:querystring) gives must not change. */
const VALID_UTF8 = [
  'OrgCode=Salg%20%C3%98st&Limit=5',
  'a=1&a=2&a=3',
  'Include[]=user&Include[]=campaign&Include[0]=x',
  'q=a+b%2Bc&k+n=v+w',
  'empty=&bare&=nameless&&x=1',
  'bad=%zz&also=100%&tail=%C3%A6%&pct=%25E6',
  'sep=%09&sep=%3B&sep=tab',
  'emoji=%F0%9F%98%80&nul=%00',
  '__proto__=x&constructor=y&hasOwnProperty=z',
  'Statuses=New,Sleeping&Statuses=Done',
  '',
];

describe('query strings', () => {
  it.each(VALID_UTF8)('when the query is %j (valid UTF-8), then it parses to the same shape as node:querystring gives', (text) => {
    expect(parseQueryString(text)).toEqual(querystring.parse(text));
  });

  it('when a value is escaped in Latin-1 (windows-1252), then it is read as that', () => {
    expect(parseQueryString('LeadPool=Pulje%20%E6%F8%E5&Projects=%C6R%D8')).toEqual({ LeadPool: 'Pulje æøå', Projects: 'ÆRØ' });
  });

  it('when a name is escaped in Latin-1, then it is read as that too', () => {
    expect(parseQueryString('K%F8benhavn=1&%C5r=2')).toEqual({ København: '1', År: '2' });
  });

  it('when one value is UTF-8 and another Latin-1, then each is read in its own', () => {
    expect(parseQueryString('a=%C3%A6&b=%E6&a=%F8')).toEqual({ a: ['æ', 'ø'], b: 'æ' });
  });

  it('when one value mixes UTF-8 escapes with Latin-1 ones, then the whole value is windows-1252', () => {
    expect(parseQueryString('v=%C3%A6%E6')).toEqual({ v: 'Ã¦æ' });
  });

  it('when a Latin-1 value has a +, then it is a space, and an escaped + is a +', () => {
    expect(parseQueryString('Pool=%C6bler+og+p%E6rer%2B')).toEqual({ Pool: 'Æbler og pærer+' });
  });

  it('when a Latin-1 value has a % that starts no escape, then that % is kept as it is', () => {
    expect(parseQueryString('v=%E6%zz%F8&w=100%&x=%E6%')).toEqual({ v: 'æ%zzø', w: '100%', x: 'æ%' });
  });

  it('when Latin-1 values repeat, then they are an array as UTF-8 ones are', () => {
    expect(parseQueryString('Projects=%C6R%D8&Projects=%C5RHUS&Projects=Odense')).toEqual({ Projects: ['ÆRØ', 'ÅRHUS', 'Odense'] });
  });

  it('when a byte is one of windows-1252 that is not ISO-8859-1, then it is the windows-1252 character', () => {
    expect(decodeQueryComponent('%80%96%9C')).toBe('€–œ');
  });

  it('when a byte is one windows-1252 leaves undefined, then it is the C1 control of that number, never U+FFFD', () => {
    expect(decodeQueryComponent('a%81b%9D')).toBe('a\u0081b\u009D');
  });

  it('when a UTF-8 sequence is cut short or overlong, then its bytes are windows-1252', () => {
    expect(decodeQueryComponent('%C3')).toBe('Ã');
    expect(decodeQueryComponent('%C3%A')).toBe('Ã%A');
    expect(decodeQueryComponent('%C0%AF')).toBe('À¯');
    expect(decodeQueryComponent('%ED%A0%80')).toBe('í\u00A0€');
  });

  it('when a component has no escape or only valid ones, then it is what querystring.unescape gives', () => {
    for (const text of ['plain', 'a b', '%C3%A6%C3%B8', '%zz', '%C3%A6%zz', '%']) {
      expect(decodeQueryComponent(text)).toBe(querystring.unescape(text));
    }
  });
});
