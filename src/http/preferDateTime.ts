import type { Request, Response } from 'express';
import parsePreferHeader from 'parse-prefer-header';
import type { DateTimeFormatName } from '../domain/enums';

/**
 * `Prefer: datetime=local|offset` (RFC 7240; docs/decisions.md, Wire): a request may override
 * its account's DateTime format. parse-prefer-header reads the header as RFC 7240 has it:
 * several preferences in one or more headers, tokens case-insensitive, quoted values, the
 * first instance of a preference counts. The value is matched case-insensitively; an unknown
 * value is ignored, as RFC 7240 asks of preferences a server cannot honour.
 */
export function preferredDateTimeFormat(prefer: string | readonly string[] | undefined): DateTimeFormatName | undefined {
  const value = parsePreferHeader(prefer).datetime;
  if (typeof value !== 'string') return undefined;
  switch (value.toLowerCase()) {
    case 'local':
      return 'Local';
    case 'offset':
      return 'Offset';
    default:
      return undefined;
  }
}

/** The header that says which preference shaped the answer; only set when one was honoured. */
export const PREFERENCE_APPLIED = 'Preference-Applied';

/**
 * The DateTime format of an answer that writes DateTimes: the request's preference, else the
 * account's. The body depends on `Prefer`, so the answer varies by it; an honoured preference
 * is echoed in `Preference-Applied`.
 */
export function answerDateTimeFormat(req: Request, res: Response, accountFormat: DateTimeFormatName): DateTimeFormatName {
  res.vary('Prefer');
  const preferred = preferredDateTimeFormat(req.headers.prefer);
  if (preferred === undefined) return accountFormat;
  res.setHeader(PREFERENCE_APPLIED, `datetime=${preferred.toLowerCase()}`);
  return preferred;
}
