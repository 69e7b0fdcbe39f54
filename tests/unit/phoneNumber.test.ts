import { digitForms, toE164 } from '../../src/domain/phoneNumber';

describe('phone numbers (E.164)', () => {
  it('when a number is written in the usual notations, then each reads as the same E.164 number', () => {
    for (const n of ['+45 20 30 40 50', '20304050', '0045 20304050', '(+45) 20-30-40-50', '+4520304050', '+45 20 30 40 50 ext 3']) {
      expect(toE164(n, 'DK')).toBe('+4520304050');
    }
    expect(toE164('020 7946 0958', 'GB')).toBe('+442079460958');
    expect(toE164('+1 212 555 0100', 'DK')).toBe('+12125550100');
  });

  it('when the text is no phone number or too short, then it is not read', () => {
    for (const n of ['abc', '12', '', '+45']) expect(toE164(n, 'DK')).toBeUndefined();
  });

  it('when a number is stored in another notation, then its digits are among the digit forms of its E.164 number', () => {
    const forms = digitForms('+442079460958');
    for (const stored of ['+44 20 7946 0958', '0044 20 7946 0958', '020 7946 0958', '20 7946 0958']) {
      expect(forms).toContain(stored.replace(/\D/g, ''));
    }
    expect(digitForms('+4520304050')).toEqual(expect.arrayContaining(['4520304050', '004520304050', '20304050']));
  });
});
