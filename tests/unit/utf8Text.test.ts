import { INVALID_BYTE, shownText, Utf8TextDecoder, utf8Text } from '../../src/streams/utf8Text';

describe('utf8Text', () => {
  it('when the bytes are valid UTF-8, then they decode as Node decodes them, U+FFFD included', () => {
    for (const text of ['', 'plain', 'Ærø 中 😀', 'a\uFFFDb']) expect(utf8Text(Buffer.from(text))).toBe(text);
  });

  it.each([
    ['a byte of Latin-1', [0x4b, 0xf8, 0x67, 0x65], `K${INVALID_BYTE}ge`],
    ['a lone continuation byte', [0x61, 0x80, 0x62], `a${INVALID_BYTE}b`],
    ['an overlong slash', [0xc0, 0xaf], `${INVALID_BYTE}${INVALID_BYTE}`],
    ['an encoded surrogate', [0xed, 0xa0, 0x80], INVALID_BYTE.repeat(3)],
    ['a sequence cut short', [0xe2, 0x82], INVALID_BYTE.repeat(2)],
    ['above U+10FFFF', [0xf4, 0x90, 0x80, 0x80], INVALID_BYTE.repeat(4)],
  ])('when the bytes hold %s, then each invalid byte is INVALID_BYTE and the rest is kept', (_name, bytes, text) => {
    expect(utf8Text(Buffer.from(bytes))).toBe(text);
  });

  it('when chunks split characters anywhere, then the decoder gives the whole text and marks only invalid bytes', () => {
    const bytes = Buffer.concat([Buffer.from('Ærø 中 😀 '), Buffer.from([0xff]), Buffer.from(' \uFFFD end')]);
    for (let size = 1; size <= 7; size++) {
      const decoder = new Utf8TextDecoder();
      let text = '';
      for (let i = 0; i < bytes.length; i += size) text += decoder.write(bytes.subarray(i, i + size));
      text += decoder.end();
      expect(text).toBe(`Ærø 中 😀 ${INVALID_BYTE} \uFFFD end`);
    }
  });

  it('when the body ends inside a character, then its bytes are marked', () => {
    const decoder = new Utf8TextDecoder();
    expect(decoder.write(Buffer.from([0x61, 0xe2, 0x82]))).toBe('a');
    expect(decoder.end()).toBe(INVALID_BYTE.repeat(2));
  });
});

describe('shownText', () => {
  it('when decoded text holds marks, then each is U+FFFD and nothing else changes', () => {
    expect(shownText(utf8Text(Buffer.from([0x42, 0x65, 0x6d, 0xe6, 0x72, 0x6b])))).toBe('Bem\uFFFDrk');
    expect(shownText(`${INVALID_BYTE}${INVALID_BYTE} Ærø \uFFFD 😀`)).toBe('\uFFFD\uFFFD Ærø \uFFFD 😀');
    expect(shownText('plain')).toBe('plain');
  });
});
