import { Readable } from 'node:stream';
import iconv from 'iconv-lite';
import { BodyRecord, csvRecords, decodeText, ndjsonRecords, UndecodableHeaderError } from '../../src/streams/bodyRecords';

/** The records of a body sent as `bytes` in `encoding`, and what ended it. */
async function read(records: (text: AsyncIterable<string>) => AsyncIterable<BodyRecord>, bytes: Buffer, encoding: string) {
  const out: BodyRecord[] = [];
  try {
    for await (const record of records(decodeText(Readable.from([bytes]), encoding))) out.push(record);
  } catch (err) {
    return { records: out, error: err as Error };
  }
  return { records: out, error: undefined };
}

const csv = (text: AsyncIterable<string>) => csvRecords(text, { separator: ';', maxRowBytes: 1024 });
const ndjson = (text: AsyncIterable<string>) => ndjsonRecords(text, 1024);
const cp1252 = (text: string) => iconv.encode(text, 'windows-1252');

describe('csvRecords', () => {
  it.each([
    ['UTF-8', 'utf-8'],
    ['US-ASCII (a legacy decoder)', 'us-ascii'],
  ])(
    'when the header row holds windows-1252 bytes read as %s, then it throws UndecodableHeaderError naming those columns with U+FFFD',
    async (_case, encoding) => {
      const { records, error } = await read(csv, cp1252('Firmanavn;Bemærkning;Særlig kode\nA;b;c\n'), encoding);
      expect(records).toEqual([]);
      expect(error).toBeInstanceOf(UndecodableHeaderError);
      expect((error as UndecodableHeaderError).columns).toEqual(['Bem\uFFFDrkning', 'S\uFFFDrlig kode']);
      expect(error!.message).not.toContain('\uFDD0');
    },
  );

  it('when two header names differ only in the bytes that could not be read, then it is UndecodableHeaderError, not a name given twice', async () => {
    const { error } = await read(csv, cp1252('Bemærkning;Bemårkning\nA;b\n'), 'utf-8');
    expect(error).toBeInstanceOf(UndecodableHeaderError);
  });

  it('when the header row is read in its own encoding, then its names come as written', async () => {
    const { records, error } = await read(csv, cp1252('Bemærkning;Ønsker\nA;b\n'), 'windows-1252');
    expect(error).toBeUndefined();
    expect(records).toEqual([{ value: { Bemærkning: 'A', Ønsker: 'b' } }]);
  });

  it('when quoting breaks at a byte that could not be read, then the message shows U+FFFD, not the mark', async () => {
    const { error } = await read(csv, cp1252('Name\n"A"æ\n'), 'utf-8');
    expect(error!.message).toContain('"\uFFFD"');
    expect(error!.message).not.toContain('\uFDD0');
  });
});

describe('ndjsonRecords', () => {
  it('when a line that is not JSON holds bytes that could not be read, then its message shows U+FFFD, not the mark', async () => {
    const { records } = await read(ndjson, cp1252('{"Bemærkning": nope}\n'), 'utf-8');
    expect(records).toHaveLength(1);
    const [record] = records as { invalid: string }[];
    expect(record!.invalid).toContain('Bem\uFFFDrkning');
    expect(record!.invalid).not.toContain('\uFDD0');
  });
});
