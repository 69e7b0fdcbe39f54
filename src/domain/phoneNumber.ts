import { parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js';

/**
 * Phone numbers as the do-not-call list compares them (docs/decisions.md, Do-not-call): E.164
 * (`+4512345678`), parsed with libphonenumber-js. A number without a country code is read in
 * the platform's default region (setting DEFAULT_PHONE_REGION). A number must be *possible*
 * (a plausible length for its country), not *valid* (an allocated range): test and new ranges
 * must still be listable, and a number that is a few digits short is not a number at all.
 */

/** The E.164 form of `input`, or undefined when it cannot be read as a phone number. */
export function toE164(input: string, region: string): string | undefined {
  const parsed = parsePhoneNumberFromString(input, region as CountryCode);
  if (parsed === undefined || !parsed.isPossible()) return undefined;
  return parsed.number;
}

/**
 * The digit strings (everything but digits removed) a stored phone number with this E.164 form
 * can have: international with or without an access prefix, national with or without the trunk
 * prefix. Leads keep their number as imported, so a listing finds its candidates by these
 * (an index on the digits) and confirms each with toE164.
 */
export function digitForms(e164: string): string[] {
  const parsed = parsePhoneNumberFromString(e164);
  if (parsed === undefined) return [e164.replace(/\D/g, '')];
  const international = parsed.number.slice(1);
  const national = parsed.nationalNumber;
  const nationalFormatted = parsed.formatNational().replace(/\D/g, '');
  return [...new Set([international, '00' + international, '011' + international, national, '0' + national, nationalFormatted])];
}
