import fc from 'fast-check';
import { JsonArrayElement, JsonArraySplitter, JsonArraySyntaxError } from '../../src/streams/jsonArrayElements';

/** The elements of `chunks` (UTF-8), with the error that ended them if any. */
function split(chunks: (string | Buffer)[], maxElementBytes = 1024 * 1024): { elements: JsonArrayElement[]; error?: JsonArraySyntaxError } {
  const splitter = new JsonArraySplitter(maxElementBytes);
  const elements: JsonArrayElement[] = [];
  try {
    for (const chunk of chunks) for (const e of splitter.write(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk))) elements.push(e);
    splitter.end();
  } catch (err) {
    if (!(err instanceof JsonArraySyntaxError)) throw err;
    return { elements, error: err };
  }
  return { elements };
}

const parsed = (elements: JsonArrayElement[]) => elements.map((e) => ('text' in e ? (JSON.parse(e.text) as unknown) : e));

/** `bytes` cut into pieces at the given places. */
function cut(bytes: Buffer, at: number[]): Buffer[] {
  const points = [...new Set(at.map((p) => p % (bytes.length + 1)))].sort((a, b) => a - b);
  const pieces: Buffer[] = [];
  let from = 0;
  for (const p of points) {
    pieces.push(bytes.subarray(from, p));
    from = p;
  }
  pieces.push(bytes.subarray(from));
  return pieces;
}

describe('JsonArraySplitter', () => {
  it('when the array holds objects, arrays, strings, numbers and literals, then each is one element', () => {
    const { elements, error } = split([' [ {"a":[1,{"b":"]}"}]} , [[]],"x\\"],", -1.5e3 ,true,null ,false]\n']);
    expect(error).toBeUndefined();
    expect(parsed(elements)).toEqual([{ a: [1, { b: ']}' }] }, [[]], 'x"],', -1500, true, null, false]);
  });

  it('when the array is empty, then there are no elements', () => {
    expect(split(['[ ]'])).toEqual({ elements: [] });
  });

  it('when the same array is cut into chunks anywhere, then the elements are the same', () => {
    fc.assert(
      fc.property(fc.array(fc.jsonValue(), { maxLength: 5 }), fc.array(fc.nat()), (values, at) => {
        const bytes = Buffer.from(JSON.stringify(values, null, values.length % 2 === 0 ? 1 : undefined), 'utf8');
        const { elements, error } = split(cut(bytes, at));
        expect(error).toBeUndefined();
        expect(parsed(elements)).toEqual(JSON.parse(JSON.stringify(values)));
      }),
    );
  });

  it('when a multi-byte character is cut between chunks, then its element reads whole', () => {
    const bytes = Buffer.from('["æ😀"]', 'utf8');
    expect(parsed(split([bytes.subarray(0, 3), bytes.subarray(3, 6), bytes.subarray(6)]).elements)).toEqual(['æ😀']);
  });

  it('when the body starts with a UTF-8 byte order mark, cut between chunks or not, then it is skipped', () => {
    const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('[{"a":"æ"}]')]);
    for (const at of [[], [1], [2], [1, 2], [3]]) expect(parsed(split(cut(bytes, at)).elements)).toEqual([{ a: 'æ' }]);
  });

  it('when a byte order mark comes after the start or only in part, then the body does not start with `[`', () => {
    expect(split([' \ufeff[1]']).error?.message).toContain('does not start with `[`');
    expect(split([Buffer.from([0xef, 0xbb, 0x5b, 0x5d])]).error?.message).toContain('does not start with `[`');
  });

  describe('element limit', () => {
    it('when an element is larger than the limit, then it is given as too large and the next ones are read', () => {
      const { elements, error } = split([`[{"a":"b"},{"x":"${'y'.repeat(200)}"},"${'z'.repeat(200)}",{"c":"d"}]`], 100);
      expect(error).toBeUndefined();
      expect(parsed(elements)).toEqual([{ a: 'b' }, { tooLarge: true }, { tooLarge: true }, { c: 'd' }]);
    });

    it('when a large string arrives in many chunks with escaped quotes cut between them, then it is too large once', () => {
      const chunks = ['[{"big":"', ...Array.from({ length: 2000 }, () => 'ab\\'), '"]x"}', ',{"next":1}]'];
      const { elements, error } = split(chunks, 1000);
      expect(error).toBeUndefined();
      expect(parsed(elements)).toEqual([{ tooLarge: true }, { next: 1 }]);
    });

    it('when an element is exactly the limit, then it is read', () => {
      const element = JSON.stringify({ a: 'x'.repeat(92) });
      expect(element).toHaveLength(100);
      expect(parsed(split([`[${element}]`], 100).elements)).toEqual([{ a: 'x'.repeat(92) }]);
    });
  });

  describe('what is not an array of elements', () => {
    it.each([
      ['an object', '{"a":1}', 'must be a JSON array', false, 0],
      ['empty', '   ', 'the body is empty', false, 0],
      ['a value after the array', '[1] [2]', 'more than one JSON value', false, 1],
      ['no comma between elements', '[{"a":1} {"b":2}]', 'where a comma or `]` must come', true, 1],
      ['a comma before `]`', '[1,]', 'a value is missing', true, 1],
      ['two commas', '[1,,2]', 'a value is missing', true, 1],
      ['an end after a comma', '[{"a":1},', 'ended before the JSON array was closed', false, 1],
      ['an end inside an element', '[{"a":1},{"b":', 'ended before the JSON array was closed', true, 1],
    ])('when the body is %s, then the elements before are given and then a syntax error', (_name, body, message, inElement, before) => {
      const { elements, error } = split([body]);
      expect(elements).toHaveLength(before);
      expect(error?.message).toContain(message);
      expect(error?.inElement).toBe(inElement);
    });
  });
});
