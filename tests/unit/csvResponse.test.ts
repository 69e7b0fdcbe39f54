import { attachmentDisposition } from '../../src/http/csvResponse';

/** The ASCII `filename` of a Content-Disposition header (quoted, or a token when it needs no quotes). */
function fallback(disposition: string): string | undefined {
  const match = /filename=(?:"([^"]*)"|([^;\s]*))/.exec(disposition);
  return match?.[1] ?? match?.[2];
}

describe('attachmentDisposition', () => {
  it.each([
    ['an emoji (a surrogate pair)', 'Calls-Salg 😀-1.csv', 'Calls-Salg _-1.csv'],
    ['two emoji', 'Calls-😀🎉.csv', 'Calls-__.csv'],
    ['an emoji beside Danish letters', 'Calls-Salg Ærø 📞-1.csv', 'Calls-Salg AEro _-1.csv'],
    ['a CJK letter and an emoji', 'Calls-中😀.csv', 'Calls-__.csv'],
  ])('when the name holds %s, then the ASCII fallback has one `_` per character', (_case, name, ascii) => {
    expect(fallback(attachmentDisposition(name))).toBe(ascii);
  });

  it('when the name holds an emoji, then filename* spells it in UTF-8', () => {
    expect(attachmentDisposition('Calls-Salg 😀.csv')).toContain(`filename*=UTF-8''${encodeURIComponent('Calls-Salg 😀.csv')}`);
  });

  it('when the name holds a slash and letters with marks, then the slash is `_` and the letters lose their marks', () => {
    expect(fallback(attachmentDisposition('Calls-TRYG A/S Åse Øst.csv'))).toBe('Calls-TRYG A_S Ase Ost.csv');
  });
});
