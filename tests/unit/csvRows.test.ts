import fc from 'fast-check';
import { parseString } from '@fast-csv/parse';
import { CsvRow, CsvRowParser, CsvSyntaxError } from '../../src/streams/csvRows';

/** The rows of `chunks` read one after the other, then the end. */
function rowsOf(chunks: string[], separator = ';', maxRowBytes = 1024 * 1024): CsvRow[] {
  const parser = new CsvRowParser(separator, maxRowBytes);
  const rows: CsvRow[] = [];
  for (const chunk of chunks) rows.push(...parser.write(chunk));
  rows.push(...parser.end());
  return rows;
}

const values = (...rows: string[][]): CsvRow[] => rows.map((v) => ({ values: v }));

/** The rows given before the error, and the error. */
function rowsUntilError(chunks: string[]): { rows: CsvRow[]; error: unknown } {
  const parser = new CsvRowParser(';', 1024);
  const rows: CsvRow[] = [];
  try {
    for (const chunk of chunks) for (const row of parser.write(chunk)) rows.push(row);
    for (const row of parser.end()) rows.push(row);
  } catch (error) {
    return { rows, error };
  }
  return { rows, error: undefined };
}

/** `text` cut into pieces at the given places. */
function cut(text: string, at: number[]): string[] {
  const points = [...new Set(at.map((p) => p % (text.length + 1)))].sort((a, b) => a - b);
  const pieces: string[] = [];
  let from = 0;
  for (const p of points) {
    pieces.push(text.slice(from, p));
    from = p;
  }
  pieces.push(text.slice(from));
  return pieces;
}

/** What fast-csv's public parser reads from `text` (the parser the bulk import used before). */
function fastCsvRows(text: string, separator: string): Promise<string[][]> {
  return new Promise((resolve, reject) => {
    const rows: string[][] = [];
    parseString<string[], string[]>(text, { delimiter: separator, ignoreEmpty: true })
      .on('data', (row: string[]) => rows.push(row))
      .on('error', reject)
      .on('end', () => resolve(rows));
  });
}

describe('CsvRowParser', () => {
  it('when rows end with LF, CRLF or CR, or not at all, then each is one row', () => {
    expect(rowsOf(['a;b\nc;d\r\ne;f\rg;h'])).toEqual(values(['a', 'b'], ['c', 'd'], ['e', 'f'], ['g', 'h']));
  });

  it('when lines are blank or hold only separators and spaces, then they are no rows', () => {
    expect(rowsOf(['a;b\n\n;\n  \n\r\n""\nc;d\n'])).toEqual(values(['a', 'b'], ['c', 'd']));
  });

  it('when values are quoted, then separators, line ends and doubled quotes inside are text', () => {
    expect(rowsOf(['"a;b";"line\r\nbreak";"say ""hi""";""\n'])).toEqual(values(['a;b', 'line\r\nbreak', 'say "hi"', '']));
  });

  it('when spaces come before an opening quote or after a closing one, then they are left out; elsewhere they are kept', () => {
    expect(rowsOf(['  "a"  ; b ;"c"\n'])).toEqual(values(['a', ' b ', 'c']));
  });

  it('when a quote stands inside an unquoted value, then it is text', () => {
    expect(rowsOf(['ab"c;d\n'])).toEqual(values(['ab"c', 'd']));
  });

  it('when a row ends with a separator, then its last value is empty', () => {
    expect(rowsOf(['a;\n;b\n'])).toEqual(values(['a', ''], ['', 'b']));
  });

  it('when the separator is a tab or a comma, then the other characters are text', () => {
    expect(rowsOf(['a,b\tc;d\n'], '\t')).toEqual(values(['a,b', 'c;d']));
    expect(rowsOf(['a,b\tc;d\n'], ',')).toEqual(values(['a', 'b\tc;d']));
  });

  it('when text follows a closing quote, then the rows before are given and then a syntax error', () => {
    const { rows, error } = rowsUntilError(['a;b\n"c"x;d\ne;f\n']);
    expect(rows).toEqual(values(['a', 'b']));
    expect(error).toBeInstanceOf(CsvSyntaxError);
    expect((error as Error).message).toMatch(/quoted value is followed by "x"/);
  });

  it('when the body ends inside a quoted value, then the rows before are given and then a syntax error', () => {
    const { rows, error } = rowsUntilError(['a;b\n"c;d\n', 'e;f\n']);
    expect(rows).toEqual(values(['a', 'b']));
    expect(error).toBeInstanceOf(CsvSyntaxError);
    expect((error as Error).message).toMatch(/closing quote is missing/);
  });

  describe('row limit', () => {
    it('when a row is larger than the limit, then it is given as too large and the next rows are read', () => {
      expect(rowsOf(['a;b\n' + 'x'.repeat(101) + ';y\nc;d\n'], ';', 100)).toEqual([
        { values: ['a', 'b'] },
        { tooLarge: true },
        { values: ['c', 'd'] },
      ]);
    });

    it('when a row is exactly the limit, then it is read', () => {
      expect(rowsOf(['x'.repeat(98) + ';y\n'], ';', 100)).toEqual(values(['x'.repeat(98), 'y']));
    });

    it('when the row is counted, then it is UTF-8 bytes of its text (æ is two), line end left out', () => {
      expect(rowsOf(['æ'.repeat(50) + '\r\n'], ';', 100)).toEqual(values(['æ'.repeat(50)]));
      expect(rowsOf(['æ'.repeat(50) + 'x\r\n'], ';', 100)).toEqual([{ tooLarge: true }]);
    });

    it('when a large row arrives in many chunks, inside a quoted value with line ends, then it is too large once and the next row is whole', () => {
      const chunks = ['a;"', ...Array.from({ length: 1000 }, () => 'x\n"";'.repeat(20)), '";b\nc;d\n'];
      expect(rowsOf(chunks, ';', 10_000)).toEqual([{ tooLarge: true }, { values: ['c', 'd'] }]);
    });

    it('when the last row has no line end and is too large, then it is given as too large', () => {
      expect(rowsOf(['a\n', 'x'.repeat(80), 'x'.repeat(80)], ';', 100)).toEqual([{ values: ['a'] }, { tooLarge: true }]);
    });
  });

  it('when the same text is cut into chunks anywhere, then the rows are the same', () => {
    const value = fc.string({ unit: fc.constantFrom('a', 'æ', ' ', ';', ',', '"', '\n', '\r', '😀'), maxLength: 8 });
    fc.assert(
      fc.property(fc.array(fc.array(value, { minLength: 1, maxLength: 4 }), { maxLength: 6 }), fc.array(fc.nat()), (rows, at) => {
        const text = rows.map((r) => r.map((v) => `"${v.replace(/"/g, '""')}"`).join(';')).join('\r\n');
        expect(rowsOf(cut(text, at))).toEqual(rowsOf([text]));
      }),
    );
  });

  // Not with a tab separator: fast-csv skips a tab at the start of a row as white space, which
  // loses an empty first value (`\ta` is one value there, two here).
  it('when a well-formed CSV is read, then the rows are what fast-csv reads', async () => {
    const value = fc.string({ unit: fc.constantFrom('a', 'æ', ' ', ';', '\t', '"', '\n', '\r\n', '😀'), maxLength: 8 });
    const quote = (v: string, separator: string) =>
      /[";\t\r\n]/.test(v) || v.includes(separator) || v.trim() !== v ? `"${v.replace(/"/g, '""')}"` : v;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(value, { minLength: 2, maxLength: 4 }), { maxLength: 6 }),
        fc.constantFrom(';', ','),
        fc.constantFrom('\n', '\r\n'),
        async (rows, separator, newline) => {
          const text = rows.map((r) => r.map((v) => quote(v, separator)).join(separator)).join(newline) + newline;
          const ours = rowsOf([text], separator).map((r) => ('values' in r ? r.values : []));
          expect(ours).toEqual(await fastCsvRows(text, separator));
        },
      ),
    );
  });
});
